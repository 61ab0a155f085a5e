package controllers

import (
	"reflect"
	"testing"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
)

func TestAllocateDHCP(t *testing.T) {
	cfg := dhcpapi.IPv4Config{ServerIP: "10.70.0.2", Router: "10.70.0.1", Pool: dhcpapi.Pool{Start: "10.70.0.2", End: "10.70.0.6", Exclude: []string{"10.70.0.3"}}}
	reqs := []dhcpRequest{
		{Config: "default/kept", MAC: "02:00:00:00:00:01", Had: "10.70.0.6"},
		{Config: "default/asks", MAC: "02:00:00:00:00:02", Want: "10.70.0.4"},
		{Config: "default/asks-taken", MAC: "02:00:00:00:00:03", Want: "10.70.0.6"},
		{Config: "default/asks-excluded", MAC: "02:00:00:00:00:04", Want: "10.70.0.3"},
		{Config: "default/asks-outside", MAC: "02:00:00:00:00:05", Want: "10.70.1.9"},
		{Config: "default/any", MAC: "02:00:00:00:00:06"},
		{Config: "default/none-left", MAC: "02:00:00:00:00:07"},
	}
	allocated, res, err := allocateDHCP(cfg, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := []dhcpResult{
		{Address: "10.70.0.6"},
		{Address: "10.70.0.4"},
		{Problem: "ip 10.70.0.6 is already allocated to mac 02:00:00:00:00:01"},
		{Problem: "ip 10.70.0.3 is excluded"},
		{Problem: "ip 10.70.1.9 is out of range 10.70.0.2-10.70.0.6"},
		{Address: "10.70.0.5"},
		{Problem: "no IP addresses available in pool 10.70.0.2-10.70.0.6"},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("results\n got %+v\nwant %+v", res, want)
	}
	wantAlloc := map[string]string{"10.70.0.2": "RESERVED", "10.70.0.3": "EXCLUDED", "10.70.0.4": "02:00:00:00:00:02", "10.70.0.5": "02:00:00:00:00:06", "10.70.0.6": "02:00:00:00:00:01"}
	if !reflect.DeepEqual(allocated, wantAlloc) {
		t.Errorf("allocated %v, want %v", allocated, wantAlloc)
	}
}
