package staticaddr

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
)

// golden compares got with testdata/name (rewritten with -update).
var golden = goldenfile.Assert

func TestMergeStaticNetworkData(t *testing.T) {
	nic := StaticNIC{
		ID: "nic-0", MAC: "52:54:00:12:34:56", Address: netip.MustParsePrefix("10.0.0.12/24"),
		Gateway: netip.MustParseAddr("10.0.0.1"), DNS: []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("1.1.1.1")},
	}
	bare := StaticNIC{ID: "nic-1", MAC: "52:58:36:0a:7f:79", Address: netip.MustParsePrefix("192.168.7.40/23")}
	for _, tc := range []struct {
		name, user string
		nic        StaticNIC
	}{
		{"alone", "", nic},
		{"no-gateway-no-dns", "", bare},
		{"user-v2-other-nic", "version: 2\nethernets:\n  mgmt:\n    match: {macaddress: '52:54:00:00:00:01'}\n    dhcp4: true\n", nic},
		{"user-v2-wrapped-vlan", "network:\n  version: 2\n  ethernets:\n    eth1: {dhcp4: true}\n  vlans:\n    vlan20: {id: 20, link: eth1, dhcp4: true}\n", nic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MergeStaticNetworkData(tc.user, tc.nic)
			if err != nil {
				t.Fatal(err)
			}
			if err := config.ValidateNetworkData(string(got)); err != nil {
				t.Fatalf("the rendered network data does not validate: %v\n%s", err, got)
			}
			golden(t, "networkdata-"+tc.name+".yaml", got)
		})
	}
}

func TestMergeStaticNetworkDataRejects(t *testing.T) {
	nic := StaticNIC{ID: "nic-0", MAC: "52:58:36:0a:7f:78", Address: netip.MustParsePrefix("10.0.0.12/24")}
	for _, tc := range []struct{ user, err string }{
		{"version: 1\nconfig:\n- type: physical\n  name: eth0\n", "must be network config version 2 (netplan) to be combined with --harvester-static-address-range, got version 1"},
		{"ethernets:\n  eth0: {dhcp4: true}\n", "got version none"},
		{"version: 2\nethernets:\n  nic-0: {dhcp4: true}\n", "ethernets.nic-0 is the device the static address is written to"},
		{"version: 2\nethernets:\n  e0:\n    match: {macaddress: 52:58:36:0A:7F:78}\n", "ethernets.e0 matches the static NIC's MAC 52:58:36:0a:7f:78"},
		{"version: 2\nethernets: [a]\n", "ethernets must be a mapping"},
		{"- a\n", "must be cloud-init network config YAML"},
	} {
		if _, err := MergeStaticNetworkData(tc.user, nic); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("MergeStaticNetworkData(%q) = %v, want an error with %q", tc.user, err, tc.err)
		}
	}
}
