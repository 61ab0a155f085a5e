// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's
// status.interfaces. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/network/setup/netstat.go.

package controllers

import (
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// simNetworkBase is the /16 the simulator hands guest addresses from.
var simNetworkBase = netip.MustParseAddr("10.52.0.0")

// simNetworkBase6 is the /64 of guests' IPv6 addresses (fault ipv6-only):
// the documentation prefix, global unicast as far as clients can tell.
var simNetworkBase6 = netip.MustParseAddr("2001:db8:52::")

// Interface infoSource values as reported by KubeVirt.
const (
	infoSourceDomain      = "domain"
	infoSourceDomainAgent = "domain, guest-agent"
	infoSourceMultus      = "multus-status"
	infoSourceSeparator   = ", "
)

// vmiInterfaceNames lists the VMI's interfaces in spec order. Like KubeVirt,
// a VMI without interfaces gets the pod network interface "default" unless
// autoattachPodInterface is false.
func vmiInterfaceNames(spec *kubevirtv1.VirtualMachineInstanceSpec) []string {
	var names []string
	for _, i := range spec.Domain.Devices.Interfaces {
		names = append(names, i.Name)
	}
	auto := spec.Domain.Devices.AutoattachPodInterface
	if len(names) == 0 && (auto == nil || *auto) {
		names = []string{"default"}
	}
	return names
}

// hash64 is a stable hash of its parts.
func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// allocateAddresses gives each of count interfaces of the VMI (key
// "namespace/name") an address in 10.52.0.0/16, derived from a hash so the
// same VMI name gets the same addresses again, probing past addresses in
// used (and never the .0 or .255 of a /24). It returns an error only when
// the range is exhausted.
func allocateAddresses(key string, count int, used map[string]bool) ([]string, error) {
	const size = 1 << 16
	taken := func(off uint32) bool {
		if off%256 == 0 || off%256 == 255 {
			return true
		}
		return used[offsetAddr(off)]
	}
	var out []string
	local := map[string]bool{}
	for i := 0; i < count; i++ {
		start := uint32(hash64(key, strconv.Itoa(i)) % size)
		found := false
		for probe := uint32(0); probe < size; probe++ {
			off := (start + probe) % size
			addr := offsetAddr(off)
			if taken(off) || local[addr] {
				continue
			}
			local[addr] = true
			out = append(out, addr)
			found = true
			break
		}
		if !found {
			return nil, fmt.Errorf("simulated network %s/16 has no free address", simNetworkBase)
		}
	}
	return out, nil
}

// allocateIPv6Addresses is allocateAddresses for IPv6-only guests: one
// global address per interface in 2001:db8:52::/64, from a hash of the VMI
// key, probing past addresses in used.
func allocateIPv6Addresses(key string, count int, used map[string]bool) ([]string, error) {
	var out []string
	for i := 0; i < count; i++ {
		for probe := 0; ; probe++ {
			b := simNetworkBase6.As16()
			h := hash64(key, strconv.Itoa(i), strconv.Itoa(probe))
			for j := 0; j < 8; j++ {
				b[8+j] = byte(h >> (8 * j))
			}
			addr := netip.AddrFrom16(b).String()
			if !used[addr] && !slices.Contains(out, addr) {
				out = append(out, addr)
				break
			}
		}
	}
	return out, nil
}

// linkLocalFor is the fe80::/64 address a guest derives from its MAC
// (modified EUI-64), reported before the global one like a guest agent.
func linkLocalFor(mac string) string {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return ""
	}
	b := [16]byte{0: 0xfe, 1: 0x80}
	copy(b[8:], []byte{hw[0] ^ 0x02, hw[1], hw[2], 0xff, 0xfe, hw[3], hw[4], hw[5]})
	return netip.AddrFrom16(b).String()
}

func offsetAddr(off uint32) string {
	b := simNetworkBase.As4()
	b[2] = byte(off >> 8)
	b[3] = byte(off)
	return netip.AddrFrom4(b).String()
}

// macFor returns the interface's MAC from the spec, or a stable locally
// administered one (52:54:00 prefix, as QEMU uses) derived from the VMI key.
func macFor(spec *kubevirtv1.VirtualMachineInstanceSpec, key, iface string) string {
	for _, i := range spec.Domain.Devices.Interfaces {
		if i.Name == iface && i.MacAddress != "" {
			return i.MacAddress
		}
	}
	h := hash64(key, "mac", iface)
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", byte(h>>16), byte(h>>8), byte(h))
}

// infoSourceAgent marks interfaces only the guest agent reports.
const infoSourceAgent = "guest-agent"

// guestOnlyInterfaces are the bridges a node running containers has
// (docker0, cni0, flannel.1), as the guest agent reports them: no name,
// infoSource guest-agent (fault guest-bridges lists them first).
func guestOnlyInterfaces(key string) []kubevirtv1.VirtualMachineInstanceNetworkInterface {
	var out []kubevirtv1.VirtualMachineInstanceNetworkInterface
	for _, b := range []struct{ name, ip string }{{"docker0", "172.17.0.1"}, {"cni0", "10.42.0.1"}, {"flannel.1", "10.42.0.0"}} {
		h := hash64(key, "bridge", b.name)
		out = append(out, kubevirtv1.VirtualMachineInstanceNetworkInterface{
			MAC: fmt.Sprintf("02:42:ac:%02x:%02x:%02x", byte(h>>16), byte(h>>8), byte(h)),
			IP:  b.ip, IPs: []string{b.ip}, InterfaceName: b.name, InfoSource: infoSourceAgent,
		})
	}
	return out
}

// interfaceStatuses builds status.interfaces: the domain always reports
// name and MAC; addresses (one per interface, from ips) appear only when
// the guest agent reports them.
func interfaceStatuses(spec *kubevirtv1.VirtualMachineInstanceSpec, key string, ips []string) []kubevirtv1.VirtualMachineInstanceNetworkInterface {
	names := vmiInterfaceNames(spec)
	out := make([]kubevirtv1.VirtualMachineInstanceNetworkInterface, 0, len(names))
	for i, name := range names {
		st := kubevirtv1.VirtualMachineInstanceNetworkInterface{
			Name:       name,
			MAC:        macFor(spec, key, name),
			InfoSource: infoSourceDomain,
		}
		if i < len(ips) && ips[i] != "" {
			st.IP = ips[i]
			st.IPs = []string{ips[i]}
			if ll := linkLocalFor(st.MAC); ll != "" && netip.MustParseAddr(ips[i]).Is6() {
				st.IP, st.IPs = ll, []string{ll, ips[i]}
			}
			st.InterfaceName = "enp" + strconv.Itoa(i+1) + "s0"
			st.InfoSource = infoSourceDomainAgent
		}
		out = append(out, st)
	}
	return out
}

// keepControllerReport carries into the interfaces the host reports what
// virt-controller owns in them, as virt-handler's NetStat.UpdateStatus
// does (KubeVirt v1.7 pkg/network/setup/netstat.go): each spec interface
// keeps the pod interface name virt-controller last reported
// (restorePodIfaceNames), and one virt-controller marked multus-status
// keeps that source (ifacesStatusFromMultus). Without it the host and
// virt-controller rewrite the VMI in turn, many times a second.
func keepControllerReport(now, prev []kubevirtv1.VirtualMachineInstanceNetworkInterface) []kubevirtv1.VirtualMachineInstanceNetworkInterface {
	for i := range now {
		if now[i].Name == "" {
			continue
		}
		j := slices.IndexFunc(prev, func(p kubevirtv1.VirtualMachineInstanceNetworkInterface) bool { return p.Name == now[i].Name })
		if j < 0 {
			now[i].PodInterfaceName = ""
			continue
		}
		now[i].PodInterfaceName = prev[j].PodInterfaceName
		if hasInfoSource(prev[j].InfoSource, infoSourceMultus) && !hasInfoSource(now[i].InfoSource, infoSourceMultus) {
			now[i].InfoSource = strings.Join(append(splitInfoSource(now[i].InfoSource), infoSourceMultus), infoSourceSeparator)
		}
	}
	return now
}

func hasInfoSource(sources, name string) bool {
	return slices.Contains(splitInfoSource(sources), name)
}

func splitInfoSource(sources string) []string {
	if sources == "" {
		return nil
	}
	return strings.Split(sources, infoSourceSeparator)
}
