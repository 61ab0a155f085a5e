package machine

import (
	"net/netip"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// SelectAddress picks the address to reach a VMI by: the first usable
// address (not loopback, link-local, multicast or unspecified) of the VM's
// own NICs in order (see nicInterfaces), IPv4 before IPv6, so an IPv6-only
// guest is reached by its IPv6 address and never by a bridge only its
// guest agent reports (docker0's 172.17.0.1). It never panics; with no
// usable address it returns "" and false.
func SelectAddress(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool) {
	ifaces = nicInterfaces(ifaces)
	if v4, ok := firstAddress(ifaces, netip.Addr.Is4); ok {
		return v4, true
	}
	return SelectIPv6(ifaces)
}

// SelectIPv6 picks the first usable IPv6 address of the VM's own NICs in
// order (link-local addresses skipped), for GetIPv6.
func SelectIPv6(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool) {
	return firstAddress(nicInterfaces(ifaces), netip.Addr.Is6)
}

// nicInterfaces keeps the entries of the VM spec's NICs: KubeVirt names
// them (the driver's nic-0, nic-1, ... in spec order), while interfaces
// only the guest agent reports (docker0, cni0, flannel.1: infoSource
// guest-agent) have no name. A status without any named entry is kept
// whole.
func nicInterfaces(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) []kubevirtv1.VirtualMachineInstanceNetworkInterface {
	var named []kubevirtv1.VirtualMachineInstanceNetworkInterface
	for _, i := range ifaces {
		if i.Name != "" {
			named = append(named, i)
		}
	}
	if len(named) == 0 {
		return ifaces
	}
	return named
}

// firstAddress is the first usable address for which keep is true.
func firstAddress(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface, keep func(netip.Addr) bool) (string, bool) {
	for _, iface := range ifaces {
		for _, c := range append([]string{iface.IP}, iface.IPs...) {
			if addr, ok := Usable(c); ok && keep(addr) {
				return addr.String(), true
			}
		}
	}
	return "", false
}

func Usable(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	addr = addr.Unmap().WithZone("")
	if addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsMulticast() || addr.IsUnspecified() {
		return netip.Addr{}, false
	}
	return addr, true
}
