package removal

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

func TestClaimsToRemoveSkipsHotplug(t *testing.T) {
	c := baseConfig()
	c.DiskInfo = `{"disks":[{"imageName":"default/ubuntu-22.04","size":40,"bootOrder":1},{"storageClassName":"sc","size":5,"hotPlugAble":true},{"storageClassName":"sc","size":6}]}`
	plan, err := planOf(t, c, "m-1", testImages)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := vmspec.BuildVM(plan)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(ClaimsToRemove(vm), ",")
	if got != "m-1-disk-0,m-1-disk-2" {
		t.Errorf("claims to remove: %s", got)
	}
}

var testImages = map[string]vmspec.ImageFacts{
	"default/ubuntu-22.04": {StorageClassName: "longhorn-ubuntu-22.04", VirtualSizeBytes: 2361393152},
}

func baseConfig() config.Config {
	c := config.Defaults()
	c.ImageName = "default/ubuntu-22.04"
	c.NetworkName = "default/vlan1"
	c.ClusterName = "c1"
	return c
}

// planOf parses c's JSON flags and plans the machine's VM.
func planOf(t *testing.T, c config.Config, machineName string, images map[string]vmspec.ImageFacts) (vmspec.VMPlan, error) {
	t.Helper()
	in, err := config.ParseInputs(c)
	if err != nil {
		t.Fatalf("parse inputs: %v", err)
	}
	return vmspec.PlanFromConfig(c, in, machineName, images)
}
