// Package staticaddr gives machines static addresses
// (--harvester-static-address-range), the whole flow: the plan of the
// static NIC (plan.go), holding an address (hold.go: the reads of what
// holds the range's addresses, and the claim of a free one with a
// labelled ConfigMap; taken.go: who holds what, pure), the network data
// that sets it (staticnet.go), and the checks against managed DHCP
// (managed.go).
package staticaddr

import (
	"errors"
	"net/netip"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
)

// Plan is one machine's static address, before and after it is held.
type Plan struct {
	config.StaticAddressing
	Network config.ObjectRef  // the static NIC's network
	MAC     string            // the static NIC's MAC
	Pool    *config.ObjectRef // the managed-DHCP IPPool of the network (nil: none)
	Held    netip.Addr
}

// PlanOf is the static address plan of the machine's static NIC (nil:
// none).
func PlanOf(s *config.StaticAddressing, plan vmspec.VMPlan) *Plan {
	if s == nil || s.NIC >= len(plan.NICs) {
		return nil
	}
	nic := plan.NICs[s.NIC]
	return &Plan{StaticAddressing: *s, Network: nic.Network, MAC: nic.MAC, Pool: nic.DHCPPool}
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

// NICReports reports whether the guest reports addr on the NIC nic.
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
