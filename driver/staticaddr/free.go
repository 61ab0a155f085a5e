package staticaddr

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// takenAddresses is who holds each address of a network: claims (by
// machine) and addresses guests report outside any claim.
type takenAddresses map[netip.Addr]string

// FreeAddresses lists the range's addresses nobody holds, lowest first.
// With none free the error names the range and what holds its addresses.
func (t takenAddresses) FreeAddresses(s *Plan) ([]netip.Addr, error) {
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

// takenOn reads what holds addresses of the static NIC's network in the VM
// namespace: every claim of the network (one list) and every address in
// the range that a VMI reports on an interface of that network and no
// claim accounts for. The VMIs read are those that can report such an
// address (two lists, by label, so that the cost does not grow with the
// driver's other machines): the machines of the same range (a claim
// deleted by hand) and every VMI the driver did not make.
func takenOn(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) (takenAddresses, error) {
	taken, err := claimedOn(ctx, api, m, s)
	if err != nil {
		return nil, err
	}
	for _, sel := range []string{staticip.LabelRange + "=" + staticip.RangeValue(s.Network.String(), s.Range.String()), "!" + harvester.LabelMachineID} {
		vmis, err := api.ListVMIs(ctx, m.Config.VMNamespace, sel)
		if err != nil {
			return nil, err
		}
		taken.reportedBy(vmis, s)
	}
	return taken, nil
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

// takenByDHCP adds the range's addresses managed DHCP has given to other
// MACs, or excluded or reserved, on the static NIC's network (one get of
// its IPPool; skipped with a warning when the credential may not read it).
func takenByDHCP(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan, taken takenAddresses) error {
	if s.Pool == nil {
		return nil
	}
	pool, err := api.GetDHCPPool(ctx, s.Pool.Namespace, s.Pool.Name)
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		log.Warnf("%s: cannot read managed-DHCP IPPool %s (%v); its allocations are not checked", m.Name, s.Pool, err)
		return nil
	}
	if err != nil || pool.Status.IPv4 == nil {
		return err
	}
	for ip, holder := range pool.Status.IPv4.Allocated {
		a, err := netip.ParseAddr(ip)
		if _, held := taken[a]; err != nil || held || !s.Range.Contains(a) || strings.EqualFold(holder, s.MAC) {
			continue
		}
		switch holder {
		case dhcpapi.Excluded, dhcpapi.Reserved:
			taken[a] = strings.ToLower(holder) + " in managed-DHCP IPPool " + s.Pool.String()
		default:
			taken[a] = "allocated by managed DHCP (IPPool " + s.Pool.String() + ") to MAC " + holder
		}
	}
	return nil
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

// FreeAddresses lists the free addresses of the range, lowest first,
// from the claims and the VMIs of the namespace; the lowest one is read
// too (one get), so that an object of its claim's name made outside the
// driver is found, and skipped, before anything is created. With no free
// address the error names the range and what holds it.
func FreeAddresses(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) ([]netip.Addr, error) {
	taken, err := takenOn(ctx, api, m, s)
	if err != nil {
		return nil, err
	}
	for {
		free, err := taken.FreeAddresses(s)
		if err != nil {
			return nil, fmt.Errorf("%w; nothing was created", err)
		}
		holder, err := api.GetConfigMap(ctx, m.Config.VMNamespace, staticip.ClaimName(s.Network.String(), free[0]))
		if apierrors.IsNotFound(err) {
			return free, nil
		}
		if err != nil {
			return nil, err
		}
		taken.holdBy(free[0], holder)
	}
}

// holdBy records who holds address a: a claim, or a foreign object of
// the claim's name.
func (t takenAddresses) holdBy(a netip.Addr, cm *corev1.ConfigMap) {
	if c, err := staticip.ClaimFromData(cm.Data); err == nil && cm.Labels[staticip.LabelClaim] != "" {
		t[a] = "held by machine " + c.Machine
		return
	}
	t[a] = "held by ConfigMap " + cm.Name + " (not a claim of this driver)"
}
