package config

import (
	"maps"
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

func TestParseVMLabels(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]string
		errs []string // each a substring of one problem, in order
	}{
		{"", nil, nil},
		{"  ", nil, nil},
		{"app=web", map[string]string{"app": "web"}, nil},
		{"app=web, example.com/team=db,empty=,", map[string]string{"app": "web", "example.com/team": "db", "empty": ""}, nil},
		{"app", nil, []string{`--harvester-vm-labels: "app": is not key=value`}},
		{"bad key!=x", nil, []string{`key "bad key!" is not a valid label key`}},
		{"a=" + strings.Repeat("v", 64), nil, []string{"is not a valid label value: must be no more than 63 characters"}},
		{"a=has space", nil, []string{"is not a valid label value"}},
		{"harvesterhci.io/creator=me", nil, []string{`key "harvesterhci.io/creator" is reserved: keys under harvesterhci.io/ are Harvester's`}},
		{"guestcluster.harvesterhci.io/name=x", nil, []string{"reserved: keys under harvesterhci.io/ are Harvester's"}},
		{"kubevirt.io/nodeName=n1", nil, []string{"reserved: keys under kubevirt.io/ are KubeVirt's"}},
		{"vm.kubevirt.io/name=x", nil, []string{"reserved: keys under kubevirt.io/ are KubeVirt's"}},
		{"node-driver.harvester-kit.io/machine-id=x", nil, []string{"reserved: keys under node-driver.harvester-kit.io/ are the node driver's"}},
		{"notharvesterhci.io/x=y", map[string]string{"notharvesterhci.io/x": "y"}, nil},
		{"a=1,a=2", nil, []string{`key "a" is given twice (first a=1)`}},
		{"x,kubevirt.io/y=z,ok=1", nil, []string{"is not key=value", "reserved"}},
	}
	for _, tc := range cases {
		got, errs := ParseVMLabels(tc.in)
		if !drivertest.CheckProblems(t, tc.in, errs, tc.errs) {
			continue
		}
		if tc.errs == nil && !maps.Equal(got, tc.want) {
			t.Errorf("%q: labels %v, want %v", tc.in, got, tc.want)
		}
	}
}
