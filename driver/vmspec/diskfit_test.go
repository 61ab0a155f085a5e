package vmspec_test

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

func TestDisksFitImages(t *testing.T) {
	const ubuntu = 2361393152 // 2.2 GiB
	sizes := map[string]int64{"default/ubuntu-22.04": ubuntu, "images/rocky": 0}
	cases := []struct {
		name   string
		mutate func(c *config.Config)
		want   []string
	}{
		{"image size", func(c *config.Config) {}, nil},
		{"larger", func(c *config.Config) { c.DiskSizeGiB = 3 }, nil},
		{"smaller", func(c *config.Config) { c.DiskSizeGiB = 2 },
			[]string{"--harvester-disk-size: 2 GiB is smaller than image default/ubuntu-22.04's virtual size 2.20 GiB; give at least 3 GiB, or 0 for the image's size"}},
		{"disk info", func(c *config.Config) {
			c.DiskInfo = `{"disks":[{"storageClassName":"x","size":1},{"imageName":"ubuntu-22.04","size":1},{"imageName":"images/rocky","size":1}]}`
		}, []string{"--harvester-disk-info: disks[1]: size: 1 GiB is smaller than image default/ubuntu-22.04's"}},
	}
	for _, tc := range cases {
		c := plans.BaseConfig()
		tc.mutate(&c)
		in, err := config.ParseInputs(c)
		if err != nil {
			t.Fatal(err)
		}
		drivertest.CheckProblems(t, tc.name, vmspec.DisksFitImages(c, in, sizes), tc.want)
	}
	c := plans.BaseConfig()
	c.DiskSizeGiB = 1
	if _, err := vmspec.PlanFromConfig(c, config.Inputs{Disks: []config.Disk{{ImageName: c.ImageName, Size: 1}}}, "m", plans.Images); err == nil || !strings.Contains(err.Error(), "smaller than image") {
		t.Errorf("plan of a disk smaller than its image: %v", err)
	}
}
