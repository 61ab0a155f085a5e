package machine

import (
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestSelectAddress checks both pickers on each input: SelectAddress (GetIP:
// IPv4 first, else IPv6) and SelectIPv6 (GetIPv6).
func TestSelectAddress(t *testing.T) {
	type ifc = kubevirtv1.VirtualMachineInstanceNetworkInterface
	cases := []struct {
		name        string
		ifaces      []ifc
		want, want6 string
	}{
		{"nil", nil, "", ""},
		{"empty interface", []ifc{{}}, "", ""},
		{"ipv4", []ifc{{IP: "10.0.0.5", IPs: []string{"10.0.0.5"}}}, "10.0.0.5", ""},
		{"link-local skipped", []ifc{{IPs: []string{"fe80::1", "169.254.1.1", "10.0.0.7"}}}, "10.0.0.7", ""},
		{"ipv4 before earlier ipv6", []ifc{{IPs: []string{"2001:db8::5"}}, {IPs: []string{"192.168.1.9"}}}, "192.168.1.9", "2001:db8::5"},
		{"ipv6 only", []ifc{{IPs: []string{"fe80::2", "2001:db8::7"}}}, "2001:db8::7", "2001:db8::7"},
		{"link-local reported as ipAddress", []ifc{{IP: "fe80::1", IPs: []string{"fe80::1", "2001:db8:52::7"}}}, "2001:db8:52::7", "2001:db8:52::7"},
		{"dual stack", []ifc{{IP: "10.0.0.5", IPs: []string{"10.0.0.5", "fd00:52::9"}}}, "10.0.0.5", "fd00:52::9"},
		{"ipv6 on the second interface", []ifc{{IPs: []string{"10.0.0.5"}}, {IPs: []string{"2001:db8::1/64"}}}, "10.0.0.5", "2001:db8::1"},
		{"zone stripped", []ifc{{IPs: []string{"2001:db8::2%eth0"}}}, "2001:db8::2", "2001:db8::2"},
		{"cidr form", []ifc{{IP: "10.1.2.3/24"}}, "10.1.2.3", ""},
		{"v4-mapped is ipv4", []ifc{{IPs: []string{"::ffff:10.0.0.8"}}}, "10.0.0.8", ""},
		{"guest-agent bridges listed first", []ifc{
			{IP: "172.17.0.1", IPs: []string{"172.17.0.1"}, InterfaceName: "docker0", InfoSource: "guest-agent"},
			{IP: "10.42.0.1", InterfaceName: "cni0", InfoSource: "guest-agent"},
			{Name: "nic-0", IP: "10.52.0.9", IPs: []string{"10.52.0.9"}, InfoSource: "domain, guest-agent"},
		}, "10.52.0.9", ""},
		{"first NIC ipv6-only beats a bridge's ipv4", []ifc{
			{IP: "172.17.0.1", InterfaceName: "docker0", InfoSource: "guest-agent"},
			{Name: "nic-0", IP: "fe80::1", IPs: []string{"fe80::1", "2001:db8:52::3"}},
		}, "2001:db8:52::3", "2001:db8:52::3"},
		{"first NIC waiting for DHCP: no bridge address", []ifc{
			{Name: "nic-0", MAC: "52:54:00:00:00:01", InfoSource: "domain"},
			{IP: "172.17.0.1", InterfaceName: "docker0", InfoSource: "guest-agent"},
			{IP: "fd00:42::1", InterfaceName: "cni0", InfoSource: "guest-agent"},
		}, "", ""},
		{"first NIC first", []ifc{{Name: "nic-0", IP: "10.52.0.1"}, {Name: "nic-1", IP: "10.52.0.2"}, {IP: "172.17.0.1"}}, "10.52.0.1", ""},
		{"garbage loopback multicast unspecified", []ifc{{IP: "nope", IPs: []string{"127.0.0.1", "::1", "0.0.0.0", "::", "ff02::1"}}}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SelectAddress(tc.ifaces)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("SelectAddress: got %q %v, want %q", got, ok, tc.want)
			}
			got, ok = SelectIPv6(tc.ifaces)
			if got != tc.want6 || ok != (tc.want6 != "") {
				t.Errorf("SelectIPv6: got %q %v, want %q", got, ok, tc.want6)
			}
		})
	}
}
