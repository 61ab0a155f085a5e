package staticaddr

import (
	"context"
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
