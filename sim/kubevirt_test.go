package sim

import (
	"encoding/json"
	"go/ast"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/harvester-kit/harvester-machine/sim/kubevirt"
)

// TestKubeVirtCRIsHarvesters: the KubeVirt CR the simulator creates is
// what Harvester v1.8.1 runs with: its chart's kubevirt.spec, and what its
// setting controllers write into it at the settings' defaults (the
// kubevirt-migration configuration, additional-guest-memory-overhead-ratio,
// max-hotplug-ratio). virt-controller renders the chart's launcher image.
func TestKubeVirtCRIsHarvesters(t *testing.T) {
	dir := harvesterModuleDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "deploy", "charts", "harvester", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		KubeVirt struct {
			Spec kubevirtv1.KubeVirtSpec `json:"spec"`
		} `json:"kubevirt"`
		Operator struct {
			Containers struct {
				Launcher struct {
					Image struct{ Repository, Tag string } `json:"image"`
				} `json:"launcher"`
			} `json:"containers"`
		} `json:"kubevirt-operator"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	want := values.KubeVirt.Spec
	settings := parseGoPackage(t, filepath.Join(dir, "pkg", "settings"))
	var migrations kubevirtv1.MigrationConfiguration
	if err := json.Unmarshal([]byte(settingDefault(t, settings, "KubeVirtMigration")), &migrations); err != nil {
		t.Fatal(err)
	}
	want.Configuration.MigrationConfiguration = &migrations
	ratio := settings.consts["AdditionalGuestMemoryOverheadRatioDefault"]
	want.Configuration.AdditionalGuestMemoryOverheadRatio = &ratio
	maxHotplug, err := strconv.ParseUint(settingDefault(t, settings, "MaxHotplugRatio"), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	want.Configuration.LiveUpdateConfiguration = &kubevirtv1.LiveUpdateConfiguration{MaxHotplugRatio: uint32(maxHotplug)}

	cr, err := kubevirt.KubeVirtCR(SystemNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Name != "kubevirt" || cr.Namespace != SystemNamespace || !equality.Semantic.DeepEqual(cr.Spec, want) {
		got, _ := json.Marshal(cr.Spec)
		exp, _ := json.Marshal(want)
		t.Errorf("KubeVirt CR %s/%s spec\n  %s\nHarvester's:\n  %s", cr.Namespace, cr.Name, got, exp)
	}
	image := values.Operator.Containers.Launcher.Image
	if launcher := image.Repository + ":" + image.Tag; kubevirt.LauncherImage != launcher {
		t.Errorf("launcher image %s, Harvester's chart %s", kubevirt.LauncherImage, launcher)
	}
}

// settingDefault is the default of a Harvester setting: the second
// argument of NewSetting(name, default) that initialises the variable.
func settingDefault(t *testing.T, settings goSource, variable string) string {
	t.Helper()
	call, ok := settings.varValue(variable).(*ast.CallExpr)
	if !ok || len(call.Args) != 2 {
		t.Fatalf("Harvester's settings: %s is not NewSetting(name, default)", variable)
	}
	s, ok := stringLit(call.Args[1])
	if !ok {
		t.Fatalf("Harvester's settings: %s's default is not a string literal", variable)
	}
	return s
}
