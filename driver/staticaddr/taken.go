package staticaddr

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// takenAddresses is who holds each address of a network: claims (by
// machine) and addresses guests report outside any claim. Its methods are
// pure: hold.go reads what fills it.
type takenAddresses map[netip.Addr]string

// free lists the range's addresses nobody holds, lowest first. With none
// free the error names the range and what holds its addresses.
func (t takenAddresses) free(s *Plan) ([]netip.Addr, error) {
	var free []netip.Addr
	for _, a := range s.Range.Addresses() {
		if _, taken := t[a]; !taken {
			free = append(free, a)
		}
	}
	if len(free) > 0 {
		return free, nil
	}
	return nil, field.Invalid(config.FlagField(config.FlagStaticAddressRange), s.Range.String(), "no free address on network %s: all %d are taken (%s); widen the range or remove machines",
		s.Network, s.Range.Size(), t.describe(s.Range))
}

// describe lists the holders of the range's addresses (at most 8 named).
func (t takenAddresses) describe(r staticip.Range) string {
	var parts []string
	for _, a := range r.Addresses() {
		if who, ok := t[a]; ok {
			parts = append(parts, a.String()+" "+who)
		}
	}
	if len(parts) > 8 {
		parts = append(parts[:8], fmt.Sprintf("and %d more", len(parts)-8))
	}
	return strings.Join(parts, ", ")
}

// claimedBy records the addresses of the range that ConfigMaps of a
// claim's name on the static NIC's network hold: the claims (by machine),
// or foreign objects of such a name.
func (t takenAddresses) claimedBy(configMaps []corev1.ConfigMap, s *Plan) {
	network := s.Network.String()
	for _, cm := range configMaps {
		a, ok := staticip.ClaimedAddress(network, cm.Name)
		if !ok || !s.Range.Contains(a) {
			continue
		}
		if c, err := staticip.ClaimFromData(cm.Data); err == nil && cm.Labels[staticip.LabelClaim] != "" {
			t[a] = "held by machine " + c.Machine
		} else {
			t[a] = "held by ConfigMap " + cm.Name + " (not a claim of this driver)"
		}
	}
}

// reportedBy adds the range's addresses the VMIs report on the static
// NIC's network that nothing holds yet.
func (t takenAddresses) reportedBy(vmis []kubevirtv1.VirtualMachineInstance, s *Plan) {
	for _, vmi := range vmis {
		for _, a := range addressesOnNetwork(vmi, s.Network.String()) {
			if _, held := t[a]; !held && s.Range.Contains(a) {
				t[a] = "in use by VM " + vmi.Name + " (not held by any machine of this driver)"
			}
		}
	}
}

// allocatedBy adds the range's addresses managed DHCP has given to other
// MACs than the static NIC's, or excluded or reserved (allocated: an
// IPPool's status.ipv4.allocated).
func (t takenAddresses) allocatedBy(allocated map[string]string, s *Plan) {
	for ip, holder := range allocated {
		a, err := netip.ParseAddr(ip)
		if _, held := t[a]; err != nil || held || !s.Range.Contains(a) || strings.EqualFold(holder, s.MAC) {
			continue
		}
		switch holder {
		case dhcpapi.Excluded, dhcpapi.Reserved:
			t[a] = strings.ToLower(holder) + " in managed-DHCP IPPool " + s.Pool.String()
		default:
			t[a] = "allocated by managed DHCP (IPPool " + s.Pool.String() + ") to MAC " + holder
		}
	}
}

// addressesOnNetwork lists the IPv4 addresses a VMI reports on its
// interfaces attached to network (<namespace>/<name>).
func addressesOnNetwork(vmi kubevirtv1.VirtualMachineInstance, network string) []netip.Addr {
	onNet := map[string]bool{}
	for _, n := range vmi.Spec.Networks {
		if n.Multus != nil && n.Multus.NetworkName == network {
			onNet[n.Name] = true
		}
	}
	var out []netip.Addr
	for _, i := range vmi.Status.Interfaces {
		if !onNet[i.Name] {
			continue
		}
		for _, s := range append([]string{i.IP}, i.IPs...) {
			if a, ok := machine.Usable(s); ok && a.Is4() {
				out = append(out, a)
			}
		}
	}
	return out
}
