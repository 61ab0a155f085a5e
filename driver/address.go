package driver

import (
	"net/netip"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// SelectAddress picks the address to reach a VMI by: the first usable
// address (not loopback, link-local, multicast or unspecified) over all
// interfaces in order, IPv4 before IPv6, so an IPv6-only guest is reached
// by its IPv6 address. It never panics; with no usable address it returns
// "" and false.
func SelectAddress(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool) {
	if v4, ok := firstAddress(ifaces, netip.Addr.Is4); ok {
		return v4, true
	}
	return SelectIPv6(ifaces)
}

// SelectIPv6 picks the first usable IPv6 address of a VMI over all
// interfaces in order (link-local addresses skipped), for GetIPv6.
func SelectIPv6(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool) {
	return firstAddress(ifaces, netip.Addr.Is6)
}

// firstAddress is the first usable address for which keep is true.
func firstAddress(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface, keep func(netip.Addr) bool) (string, bool) {
	for _, iface := range ifaces {
		for _, c := range append([]string{iface.IP}, iface.IPs...) {
			if addr, ok := usable(c); ok && keep(addr) {
				return addr.String(), true
			}
		}
	}
	return "", false
}

func usable(s string) (netip.Addr, bool) {
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
