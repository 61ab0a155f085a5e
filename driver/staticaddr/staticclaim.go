// Package staticaddr gives machines static addresses
// (--harvester-static-address-range): it claims a free address of the
// range with a labelled ConfigMap, renders the network data that sets it,
// validates the user's network data, and checks addresses against
// managed DHCP.
package staticaddr

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Plan is one machine's static address, before and after it is held.
type Plan struct {
	config.StaticAddressing
	Network config.ObjectRef  // the static NIC's network
	MAC     string            // the static NIC's MAC
	Pool    *config.ObjectRef // the managed-DHCP IPPool of the network (nil: none)
	Held    netip.Addr
}

// Annotations are the VM annotations of the held address: where managed
// DHCP serves the network, the static-ip annotation asks it for the held
// address, so its pool accounts for it (add-ons before the v1.9 line
// ignore it).
func (s *Plan) Annotations() map[string]string {
	if s.Pool == nil || !s.Held.IsValid() {
		return nil
	}
	return map[string]string{dhcpapi.AnnotationStaticIPPrefix + s.NICName(): s.Held.String()}
}

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

// claimedOn reads the claims of the static NIC's network and what managed
// DHCP gave away in the range.
func claimedOn(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) (takenAddresses, error) {
	taken := takenAddresses{}
	claims, err := api.ListConfigMaps(ctx, m.Config.VMNamespace, staticip.LabelClaim+"="+staticip.NetworkValue(s.Network.String()))
	if err != nil {
		return nil, err
	}
	for _, cm := range claims {
		c, err := staticip.ClaimFromData(cm.Data)
		if err != nil {
			continue
		}
		taken[c.Address.Addr()] = "held by machine " + c.Machine
	}
	if err := takenByDHCP(ctx, api, m, s, taken); err != nil {
		return nil, err
	}
	return taken, nil
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

// ClaimAddress holds the lowest free address for the machine's VM vm: it
// creates the address's claim (owned by vm, so garbage collection frees
// it with the VM) and, when the name is taken (another machine won it, or
// a claim whose VM is gone awaits the garbage collector), tries the next
// free address, reading the claims again after every few lost races.
func ClaimAddress(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan, free []netip.Addr, vm *kubevirtv1.VirtualMachine) error {
	const relistAfter = 4
	lost := takenAddresses{}
	for len(free) > 0 {
		a := free[0]
		free = free[1:]
		claim, err := api.CreateConfigMap(ctx, claimObject(m, s, a, vm))
		if err == nil {
			s.Held = a
			m.Held.HeldClaim, m.Held.HeldClaimUID = claim.Name, string(claim.UID)
			log.Infof("%s: holds address %s (range %s) for %s", m.Name, s.Range.WithPrefix(a), s.Range, s.NICName())
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		lost[a] = "taken meanwhile"
		if len(lost)%relistAfter == 0 || len(free) == 0 {
			taken, err := takenOn(ctx, api, m, s)
			if err != nil {
				return err
			}
			for la, why := range lost {
				if _, ok := taken[la]; !ok {
					taken[la] = why
				}
			}
			if free, err = taken.FreeAddresses(s); err != nil {
				return err
			}
		}
	}
	return field.Invalid(config.FlagField(config.FlagStaticAddressRange), s.Range.String(), "no free address left on network %s", s.Network)
}

// claimObject is the claim of address a for the machine, owned by vm.
func claimObject(m *machine.Machine, s *Plan, a netip.Addr, vm *kubevirtv1.VirtualMachine) *corev1.ConfigMap {
	network := s.Network.String()
	labels := harvester.MachineLabels(m.Config.VMNamespace, m.Name, m.Config.ClusterName)
	labels[staticip.LabelClaim] = staticip.NetworkValue(network)
	labels[staticip.LabelMachine] = harvester.LabelValue(m.Name)
	labels[harvester.LabelMachineID] = m.Ownership.MachineID
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: staticip.ClaimName(network, a), Namespace: m.Config.VMNamespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{machine.VMOwnerReference(vm)},
		},
		Data: staticip.ClaimData(staticip.Claim{
			Address: netip.PrefixFrom(a, s.Range.Prefix.Bits()), Range: s.Range.String(), Network: network,
			NIC: s.NICName(), MAC: s.MAC, Machine: m.Name,
		}),
	}
}

// NetworkData is the machine's network data with its held address.
func (s *Plan) NetworkData(user string) ([]byte, error) {
	if !s.Held.IsValid() {
		return nil, errors.New("render network data: no address is held")
	}
	return MergeStaticNetworkData(user, StaticNIC{
		ID: s.NICName(), MAC: s.MAC, Address: netip.PrefixFrom(s.Held, s.Range.Prefix.Bits()), Gateway: s.Gateway, DNS: s.DNS,
	})
}

// ReportsOn is the wait goal of a machine with a held address: running,
// with the guest reporting that address on the static NIC.
func ReportsOn(nic string, addr netip.Addr) machine.Goal {
	return func(vmi *kubevirtv1.VirtualMachineInstance) bool {
		if vmi == nil || vmi.DeletionTimestamp != nil || vmi.Status.Phase != kubevirtv1.Running {
			return false
		}
		return NICReports(vmi.Status.Interfaces, nic, addr)
	}
}

func NICReports(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface, nic string, addr netip.Addr) bool {
	for _, i := range ifaces {
		if i.Name != nic {
			continue
		}
		for _, s := range append([]string{i.IP}, i.IPs...) {
			if a, ok := machine.Usable(s); ok && a == addr {
				return true
			}
		}
	}
	return false
}

