package driver

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

func TestValidateStatic(t *testing.T) {
	base := func() config.Config {
		return config.Config{KubeconfigContent: drivertest.Kubeconfig, VMNamespace: "default", CPUCount: 2, MemoryGiB: 4, ReservedMemoryMiB: -1,
			ImageName: "default/img", NetworkName: "default/vlan1", WaitTimeoutSeconds: 600, APITimeoutSeconds: 30}
	}
	for _, tc := range []struct {
		name string
		mod  func(*config.Config)
		errs []string
	}{
		{"ok", func(c *config.Config) {
			c.StaticAddressRange, c.StaticGateway, c.StaticDNS = "10.0.0.10-10.0.0.59/24", "10.0.0.1", []string{"10.0.0.2,10.0.0.3"}
		}, nil},
		{"companions without range", func(c *config.Config) {
			c.StaticGateway, c.StaticDNS, c.StaticInterface = "10.0.0.1", []string{"1.1.1.1"}, "nic-0"
		}, []string{
			"--harvester-static-gateway: needs --harvester-static-address-range",
			"--harvester-static-dns: needs --harvester-static-address-range",
			"--harvester-static-interface: needs --harvester-static-address-range",
		}},
		{"every problem at once", func(c *config.Config) {
			c.StaticAddressRange, c.StaticGateway, c.StaticDNS, c.StaticInterface = "10.0.0.10-10.0.1.59/24", "10.0.0.300", []string{"dns.example"}, "eth0"
		}, []string{
			`--harvester-static-address-range: "10.0.0.10-10.0.1.59/24": 10.0.0.10 and 10.0.1.59 are not in one /24 subnet`,
			`--harvester-static-gateway: "10.0.0.300" is not an IPv4 address`,
			`--harvester-static-dns: "dns.example" is not an IP address`,
			`--harvester-static-interface: "eth0" is not an interface name; write nic-<i>`,
		}},
		{"gateway inside the range", func(c *config.Config) { c.StaticAddressRange, c.StaticGateway = "10.0.0.10-10.0.0.59/24", "10.0.0.10" }, []string{
			"--harvester-static-gateway: 10.0.0.10 is inside the range 10.0.0.10-10.0.0.59/24",
		}},
		{"no such NIC", func(c *config.Config) { c.StaticAddressRange, c.StaticInterface = "10.0.0.10-10.0.0.59/24", "nic-1" }, []string{
			"--harvester-static-interface: nic-1 does not exist: the machine has 1 interface(s), nic-0 to nic-0",
		}},
		{"negative NIC", func(c *config.Config) { c.StaticAddressRange, c.StaticInterface = "10.0.0.10-10.0.0.59/24", "nic--1" }, []string{
			`--harvester-static-interface: "nic--1" is not an interface name; write nic-<i> for the i-th interface (nic-0 is the first)`,
		}},
		{"negative NIC of several", func(c *config.Config) {
			c.StaticAddressRange, c.StaticInterface = "10.0.0.10-10.0.0.59/24", "nic--1"
			c.NetworkInfo = `{"interfaces":[{"networkName":"default/vlan1"},{"networkName":"default/vlan2"}]}`
		}, []string{`--harvester-static-interface: "nic--1" is not an interface name`}},
		{"unusable range and gateway at once", func(c *config.Config) {
			c.StaticAddressRange, c.StaticGateway = "127.0.0.10-127.0.0.59/24", "224.0.0.1"
		}, []string{
			`--harvester-static-address-range: "127.0.0.10-127.0.0.59/24": the range is loopback (127.0.0.0/8)`,
			"--harvester-static-gateway: 224.0.0.1 is multicast (224.0.0.0/4); a gateway must be a unicast address",
		}},
		{"gateway is the network address", func(c *config.Config) { c.StaticAddressRange, c.StaticGateway = "10.0.0.10-10.0.0.59/24", "10.0.0.0" }, []string{
			"--harvester-static-gateway: 10.0.0.0 is the network address of 10.0.0.0/24, not a host",
		}},
		{"gateway is the broadcast address", func(c *config.Config) { c.StaticAddressRange, c.StaticGateway = "10.0.0.10-10.0.0.59/24", "10.0.0.255" }, []string{
			"--harvester-static-gateway: 10.0.0.255 is the broadcast address of 10.0.0.0/24, not a host",
		}},
		{"masquerade NIC", func(c *config.Config) {
			c.StaticAddressRange, c.NetworkInfo = "10.0.0.10-10.0.0.59/24", `{"interfaces":[{"networkName":"default/vlan1","type":"masquerade"}]}`
		}, []string{"--harvester-static-interface: nic-0 uses masquerade binding"}},
		{"network data v1", func(c *config.Config) {
			c.StaticAddressRange, c.NetworkData = "10.0.0.10-10.0.0.59/24", "version: 1\nconfig:\n- type: physical\n  name: eth0\n"
		}, []string{"--harvester-network-data: must be network config version 2 (netplan) to be combined with --harvester-static-address-range"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mod(&c)
			err := Validate(c, "m1", "root", 22)
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.errs)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}
