package removal

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

func TestClaimsToRemoveSkipsHotplug(t *testing.T) {
	c := plans.BaseConfig()
	c.DiskInfo = `{"disks":[{"imageName":"default/ubuntu-22.04","size":40,"bootOrder":1},{"storageClassName":"sc","size":5,"hotPlugAble":true},{"storageClassName":"sc","size":6}]}`
	plan, err := plans.Of(t, c, "m-1", plans.Images)
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
