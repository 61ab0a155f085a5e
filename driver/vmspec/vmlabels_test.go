package vmspec_test

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func TestVMLabelsOnVMAndTemplateOnly(t *testing.T) {
	c := plans.BaseConfig()
	c.VMLabels = "app=web"
	in, err := config.ParseInputs(c)
	if err != nil {
		t.Fatal(err)
	}
	p, err := vmspec.PlanFromConfig(c, in, "c1-pool1-x7k2p", plans.Images)
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
