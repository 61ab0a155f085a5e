package vmspec_test

import (
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

func TestPlanDeterministicMACs(t *testing.T) {
	c := config.Config{VMNamespace: "default", CPUCount: 2, MemoryGiB: 4, ImageName: "default/img",
		NetworkInfo: `{"interfaces":[{"networkName":"default/vlan1"},{"networkName":"default/vlan2","macAddress":"52:54:00:12:34:56"}]}`}
	images := map[string]vmspec.ImageFacts{"default/img": {StorageClassName: "sc"}}
	p1, err := plans.Of(t, c, "pool1-m1", images)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := plans.Of(t, c, "pool1-m1", images)
	p3, _ := plans.Of(t, c, "pool1-m2", images)
	if p1.NICs[0].MAC == "" || p1.NICs[0].MAC != p2.NICs[0].MAC || p1.NICs[0].MAC == p3.NICs[0].MAC {
		t.Fatalf("MACs not deterministic per machine: %s %s %s", p1.NICs[0].MAC, p2.NICs[0].MAC, p3.NICs[0].MAC)
	}
	if p1.NICs[1].MAC != "52:54:00:12:34:56" {
		t.Fatalf("the user's MAC was replaced: %s", p1.NICs[1].MAC)
	}
}
