package driver

import (
	"net/netip"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// SelectAddress picks the address to reach a VMI by: the first usable
// address (not loopback, link-local, multicast or unspecified) over all
// interfaces in order, IPv4 before IPv6. It never panics; with no usable
// address it returns "" and false.
func SelectAddress(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool) {
	var firstV6 string
	for _, iface := range ifaces {
		candidates := append([]string{iface.IP}, iface.IPs...)
		for _, c := range candidates {
			addr, ok := usable(c)
			if !ok {
				continue
			}
			if addr.Is4() {
				return addr.String(), true
			}
			if firstV6 == "" {
				firstV6 = addr.String()
			}
		}
	}
	return firstV6, firstV6 != ""
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
