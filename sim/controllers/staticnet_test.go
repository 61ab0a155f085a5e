package controllers

import (
	"reflect"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestStaticAddresses(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      map[string]string
	}{
		{"v2", "version: 2\nethernets:\n  nic-0:\n    match: {macaddress: \"52:54:00:AA:00:01\"}\n    addresses: [10.60.0.12/24, fd00::5/64]\n  eth1: {dhcp4: true}\n",
			map[string]string{"52:54:00:aa:00:01": "10.60.0.12"}},
		{"wrapped", "network:\n  version: 2\n  ethernets:\n    a:\n      match: {macaddress: '02:00:00:00:00:01'}\n      addresses: [fd00::5/64, 10.0.0.9/16]\n",
			map[string]string{"02:00:00:00:00:01": "10.0.0.9"}},
		{"v1 is left to DHCP", "version: 1\nconfig:\n- type: physical\n  mac_address: '02:00:00:00:00:01'\n", map[string]string{}},
		{"not yaml", "{", nil},
	} {
		if got := staticAddresses([]byte(tc.doc)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: staticAddresses = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestApplyStatic(t *testing.T) {
	spec := &kubevirtv1.VirtualMachineInstanceSpec{}
	spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{Name: "nic-0"}, {Name: "nic-1", MacAddress: "02:00:00:00:00:02"}}
	got := applyStatic(spec, "default/vm", []string{"10.52.0.1", "10.52.0.2"}, map[string]string{"02:00:00:00:00:02": "10.60.0.7"})
	if !reflect.DeepEqual(got, []string{"10.52.0.1", "10.60.0.7"}) {
		t.Fatalf("applyStatic = %v", got)
	}
}
