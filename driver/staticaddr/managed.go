package staticaddr

import (
	"context"
	"net/netip"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// RunningWithAddressOn is the wait goal of a machine on managed DHCP: the
// guest reports an address on that NIC.
func RunningWithAddressOn(nic string) machine.Goal {
	return func(vmi *kubevirtv1.VirtualMachineInstance) bool {
		if !machine.RunningWithAddress(vmi) {
			return false
		}
		_, ok := addressOn(vmi.Status.Interfaces, nic)
		return ok
	}
}

// addressOn is the first usable IPv4 address reported on the NIC.
func addressOn(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface, nic string) (netip.Addr, bool) {
	for _, i := range ifaces {
		if i.Name != nic {
			continue
		}
		for _, s := range append([]string{i.IP}, i.IPs...) {
			if a, ok := machine.Usable(s); ok && a.Is4() {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// dhcpAllocation is the address managed DHCP allocated to mac, from the
// VM's VirtualMachineNetworkConfig (one get); false when none is known.
func dhcpAllocation(ctx context.Context, api *harvesterapi.API, m *machine.Machine, mac string) (netip.Addr, bool) {
	cfg, err := api.GetNetworkConfig(ctx, m.Config.VMNamespace, m.Name)
	if err != nil {
		log.Debugf("%s: managed-DHCP network config: %v", m.Name, err)
		return netip.Addr{}, false
	}
	for _, st := range cfg.Status.NetworkConfigs {
		if strings.EqualFold(st.MACAddress, mac) && st.AllocatedIPAddress != "" {
			a, err := netip.ParseAddr(st.AllocatedIPAddress)
			return a, err == nil
		}
	}
	return netip.Addr{}, false
}

// HoldManaged records in m the address the guest leased from managed
// DHCP on the NIC (on a network an IPPool serves: nic.DHCPPool; GetIP
// reports it from then on) and checks it against the add-on's allocation
// for the NIC's MAC.
func HoldManaged(ctx context.Context, api *harvesterapi.API, m *machine.Machine, nic vmspec.NICPlan, vmi *kubevirtv1.VirtualMachineInstance) string {
	mac, pool := nic.MAC, nic.DHCPPool
	addr, _ := addressOn(vmi.Status.Interfaces, nic.Name)
	m.Held.HeldAddress, m.Held.HeldInterface = addr.String(), nic.Name
	if alloc, ok := dhcpAllocation(ctx, api, m, mac); ok && alloc != addr {
		log.Warnf("%s: %s reports %s but managed DHCP (IPPool %s) allocated %s to its MAC %s", m.Name, nic.Name, addr, pool, alloc, mac)
	} else if ok {
		log.Infof("%s: managed DHCP (IPPool %s) allocated %s to %s (MAC %s)", m.Name, pool, addr, nic.Name, mac)
	}
	return addr.String()
}

// CheckWithDHCP warns when managed DHCP serves the static NIC's
// network but allocated another address than the held one to its MAC:
// the add-on ignores the static-ip annotation (before its v1.9 line), so
// its pool also spends that address on the machine while it lives
// (harvester#5452).
func CheckWithDHCP(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) {
	if s.Pool == nil {
		return
	}
	alloc, ok := dhcpAllocation(ctx, api, m, s.MAC)
	switch {
	case !ok:
		log.Warnf("%s: managed DHCP (IPPool %s) shows no allocation for %s (MAC %s) yet", m.Name, s.Pool, s.NICName(), s.MAC)
	case alloc != s.Held:
		log.Warnf("%s: managed DHCP (IPPool %s) allocated %s to %s (MAC %s), not the held %s: the add-on ignores the static-ip.harvesterhci.io annotation (it needs vm-dhcp-controller's v1.9 line), so its pool also spends %s on this machine while it lives (harvester#5452)",
			m.Name, s.Pool, alloc, s.NICName(), s.MAC, s.Held, alloc)
	default:
		log.Infof("%s: managed DHCP (IPPool %s) accounts for the held %s", m.Name, s.Pool, s.Held)
	}
}

// ManagedNIC is the machine's first NIC on a network managed DHCP serves
// (nil: none).
func ManagedNIC(plan vmspec.VMPlan) *vmspec.NICPlan {
	for i := range plan.NICs {
		if plan.NICs[i].DHCPPool != nil {
			return &plan.NICs[i]
		}
	}
	return nil
}
