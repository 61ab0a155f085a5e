package staticaddr

// Holding a static address: which addresses of the range are free
// (FreeAddresses, before anything is created) and the claim of the lowest
// one for the machine's VM (ClaimAddress). What holds each address is
// worked out by the pure methods of taken.go.

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// FreeAddresses lists the free addresses of the range, lowest first,
// from the claims, the other objects of a claim's name (made outside the
// driver: skipped before anything is created) and the VMIs of the
// namespace. With no free address the error names the range and what
// holds it.
func FreeAddresses(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) ([]netip.Addr, error) {
	taken, err := takenOn(ctx, api, m, s)
	if err != nil {
		return nil, err
	}
	free, err := taken.free(s)
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was created", err)
	}
	return free, nil
}

// takenOn reads what holds addresses of the static NIC's network in the VM
// namespace: every claim of the network and every other ConfigMap of a
// claim's name (one list of the namespace's ConfigMaps: a label selector
// would miss the foreign ones), what managed DHCP gave away in the range
// (one get of its IPPool, when it serves the network), and every address
// in the range that a VMI reports on an interface of that network and no
// claim accounts for. The VMIs read are those that can report such an
// address (two lists, by label, so that the cost does not grow with the
// driver's other machines): the machines of the same range (a claim
// deleted by hand) and every VMI the driver did not make.
func takenOn(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) (takenAddresses, error) {
	ns := m.Config.VMNamespace
	taken := takenAddresses{}
	configMaps, err := api.ListConfigMaps(ctx, ns, "")
	if err != nil {
		return nil, err
	}
	taken.claimedBy(configMaps, s)
	if err := dhcpAllocations(ctx, api, m, s, taken); err != nil {
		return nil, err
	}
	for _, sel := range []string{staticip.LabelRange + "=" + staticip.RangeValue(s.Network.String(), s.Range.String()), "!" + harvester.LabelMachineID} {
		vmis, err := api.ListVMIs(ctx, ns, sel)
		if err != nil {
			return nil, err
		}
		taken.reportedBy(vmis, s)
	}
	return taken, nil
}

// dhcpAllocations reads the static NIC's network's managed-DHCP IPPool,
// if any, and adds what it gave away (skipped with a warning when the
// credential may not read it).
func dhcpAllocations(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan, taken takenAddresses) error {
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
	taken.allocatedBy(pool.Status.IPv4.Allocated, s)
	return nil
}

// ClaimAddress holds the lowest free address for the machine's VM vm: it
// creates the address's claim (owned by vm, so garbage collection frees
// it with the VM) and records it as the machine's held address (m.Held),
// and, when the name is taken (another machine won it, or
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
			m.Held.HeldAddress, m.Held.HeldInterface = a.String(), s.NICName()
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
			if free, err = taken.free(s); err != nil {
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
