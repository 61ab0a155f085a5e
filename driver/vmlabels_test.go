package driver

import (
	"maps"
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
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
		got, errs := vmspec.ParseVMLabels(tc.in)
		if !checkProblems(t, tc.in, errs, tc.errs) {
			continue
		}
		if tc.errs == nil && !maps.Equal(got, tc.want) {
			t.Errorf("%q: labels %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestVMLabelsOnVMAndTemplateOnly(t *testing.T) {
	c := baseConfig()
	c.VMLabels = "app=web"
	in, err := vmspec.ParseInputs(c)
	if err != nil {
		t.Fatal(err)
	}
	p, err := vmspec.PlanFromConfig(c, in, "c1-pool1-x7k2p", testImages)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := vmspec.BuildVM(p)
	if err != nil {
		t.Fatal(err)
	}
	if vm.Labels["app"] != "web" || vm.Spec.Template.ObjectMeta.Labels["app"] != "web" {
		t.Errorf("user label missing: VM %v, template %v", vm.Labels, vm.Spec.Template.ObjectMeta.Labels)
	}
	if vm.Labels[harvester.LabelCreator] != harvester.CreatorValue {
		t.Errorf("driver's labels lost: %v", vm.Labels)
	}
	if s := vmspec.BuildUserDataSecret(p, nil, nil); s.Labels["app"] != "" {
		t.Errorf("user labels on the cloud-init Secret: %v", s.Labels)
	}
	if strings.Contains(vm.Annotations[harvester.AnnotationVolumeClaimTemplates], `"app"`) {
		t.Errorf("user labels on the volume claims: %s", vm.Annotations[harvester.AnnotationVolumeClaimTemplates])
	}
}
