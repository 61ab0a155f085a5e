package controllers

import (
	"net/netip"
	"reflect"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

func specWithInterfaces(names ...string) *kubevirtv1.VirtualMachineInstanceSpec {
	s := &kubevirtv1.VirtualMachineInstanceSpec{}
	for _, n := range names {
		s.Domain.Devices.Interfaces = append(s.Domain.Devices.Interfaces, kubevirtv1.Interface{Name: n})
	}
	return s
}

func TestAllocateAddresses(t *testing.T) {
	first, err := allocateAddresses("default/vm1", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := allocateAddresses("default/vm1", 2, nil)
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("not deterministic: %v vs %v", first, again)
	}
	if first[0] == first[1] {
		t.Fatalf("two interfaces share %s", first[0])
	}
	prefix := netip.MustParsePrefix("10.52.0.0/16")
	for _, a := range first {
		ip := netip.MustParseAddr(a)
		if !prefix.Contains(ip) || ip.As4()[3] == 0 || ip.As4()[3] == 255 {
			t.Errorf("address %s outside the usable sim range", a)
		}
	}
	used := map[string]bool{first[0]: true}
	moved, _ := allocateAddresses("default/vm1", 1, used)
	if moved[0] == first[0] {
		t.Errorf("allocated used address %s", moved[0])
	}
	other, _ := allocateAddresses("default/vm2", 1, nil)
	if other[0] == first[0] {
		t.Errorf("vm1 and vm2 hash to the same address %s (test keys need changing)", other[0])
	}
}

func TestInterfaceStatuses(t *testing.T) {
	auto := false
	noAuto := &kubevirtv1.VirtualMachineInstanceSpec{}
	noAuto.Domain.Devices.AutoattachPodInterface = &auto
	withMAC := specWithInterfaces("nic-1")
	withMAC.Domain.Devices.Interfaces[0].MacAddress = "02:00:00:00:00:01"
	tests := []struct {
		name       string
		spec       *kubevirtv1.VirtualMachineInstanceSpec
		ips        []string
		wantNames  []string
		wantIPs    []string
		wantSource string
	}{
		{"no ip", specWithInterfaces("nic-1", "nic-2"), nil, []string{"nic-1", "nic-2"}, []string{"", ""}, infoSourceDomain},
		{"with ips", specWithInterfaces("nic-1", "nic-2"), []string{"10.52.0.1", "10.52.0.2"}, []string{"nic-1", "nic-2"},
			[]string{"10.52.0.1", "10.52.0.2"}, infoSourceDomainAgent},
		{"default pod interface", &kubevirtv1.VirtualMachineInstanceSpec{}, nil, []string{"default"}, []string{""}, infoSourceDomain},
		{"autoattach off", noAuto, nil, nil, nil, ""},
		{"spec mac kept", withMAC, nil, []string{"nic-1"}, []string{""}, infoSourceDomain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := interfaceStatuses(tt.spec, "default/vm", tt.ips)
			if len(got) != len(tt.wantNames) {
				t.Fatalf("got %d interfaces, want %d", len(got), len(tt.wantNames))
			}
			for i, st := range got {
				if st.Name != tt.wantNames[i] || st.IP != tt.wantIPs[i] || st.InfoSource != tt.wantSource || st.MAC == "" {
					t.Errorf("interface %d = %+v", i, st)
				}
				if st.IP != "" && !reflect.DeepEqual(st.IPs, []string{st.IP}) {
					t.Errorf("ipAddresses = %v, want [%s]", st.IPs, st.IP)
				}
			}
			if tt.name == "spec mac kept" && got[0].MAC != "02:00:00:00:00:01" {
				t.Errorf("mac = %s", got[0].MAC)
			}
		})
	}
}

func TestIPv6OnlyAddresses(t *testing.T) {
	spec := specWithInterfaces("default", "nic-1")
	ips, err := allocateIPv6Addresses("default/vm6", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	prefix := netip.MustParsePrefix("2001:db8:52::/64")
	for _, ip := range ips {
		if a := netip.MustParseAddr(ip); !prefix.Contains(a) {
			t.Errorf("%s is outside %s", ip, prefix)
		}
	}
	if ips[0] == ips[1] {
		t.Fatalf("two interfaces share %s", ips[0])
	}
	taken, _ := allocateIPv6Addresses("default/other", 1, map[string]bool{ips[0]: true, ips[1]: true})
	if taken[0] == ips[0] || taken[0] == ips[1] {
		t.Errorf("used address %s handed out again", taken[0])
	}
	st := interfaceStatuses(spec, "default/vm6", ips)
	for i, s := range st {
		ll := netip.MustParseAddr(s.IP)
		if !ll.IsLinkLocalUnicast() || s.IPs[0] != s.IP || s.IPs[1] != ips[i] || len(s.IPs) != 2 {
			t.Errorf("interface %d: ip %s ips %v, want link-local first then %s", i, s.IP, s.IPs, ips[i])
		}
	}
	if got := linkLocalFor("52:54:00:12:34:56"); got != "fe80::5054:ff:fe12:3456" {
		t.Errorf("linkLocalFor = %s", got)
	}
}

// TestKeepControllerReport: what virt-controller owns in an interface's
// status survives the host's report, as in KubeVirt v1.7's
// pkg/network/setup/netstat.go (restorePodIfaceNames: the name from the
// last report, empty when there was none; ifacesStatusFromMultus:
// multus-status appended after the host's sources, ", "-separated).
func TestKeepControllerReport(t *testing.T) {
	type iface = kubevirtv1.VirtualMachineInstanceNetworkInterface
	cases := []struct {
		name      string
		now, prev []iface
		want      []iface
	}{
		{name: "pod interface name kept",
			now:  []iface{{Name: "nic-0", InfoSource: "domain", MAC: "52:54:00:00:00:01"}},
			prev: []iface{{Name: "nic-0", PodInterfaceName: "pod0e6b58809dd"}},
			want: []iface{{Name: "nic-0", InfoSource: "domain", MAC: "52:54:00:00:00:01", PodInterfaceName: "pod0e6b58809dd"}}},
		{name: "multus-status kept after the host's sources",
			now:  []iface{{Name: "nic-1", InfoSource: "domain, guest-agent"}},
			prev: []iface{{Name: "nic-1", InfoSource: "multus-status", PodInterfaceName: "podabc"}},
			want: []iface{{Name: "nic-1", InfoSource: "domain, guest-agent, multus-status", PodInterfaceName: "podabc"}}},
		{name: "nothing reported before",
			now:  []iface{{Name: "nic-0", InfoSource: "domain", PodInterfaceName: "stale"}},
			want: []iface{{Name: "nic-0", InfoSource: "domain"}}},
		{name: "guest-only interface untouched",
			now:  []iface{{InterfaceName: "docker0", InfoSource: "guest-agent"}},
			prev: []iface{{Name: "nic-0", PodInterfaceName: "pod0e6b58809dd"}},
			want: []iface{{InterfaceName: "docker0", InfoSource: "guest-agent"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keepControllerReport(tc.now, tc.prev); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
