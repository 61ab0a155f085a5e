package vmspec

import (
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
)

func TestPlanDeterministicMACs(t *testing.T) {
	c := config.Config{VMNamespace: "default", CPUCount: 2, MemoryGiB: 4, ImageName: "default/img",
		NetworkInfo: `{"interfaces":[{"networkName":"default/vlan1"},{"networkName":"default/vlan2","macAddress":"52:54:00:12:34:56"}]}`}
	images := map[string]ImageFacts{"default/img": {StorageClassName: "sc"}}
	p1, err := planOf(t, c, "pool1-m1", images)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := planOf(t, c, "pool1-m1", images)
	p3, _ := planOf(t, c, "pool1-m2", images)
	if p1.NICs[0].MAC == "" || p1.NICs[0].MAC != p2.NICs[0].MAC || p1.NICs[0].MAC == p3.NICs[0].MAC {
		t.Fatalf("MACs not deterministic per machine: %s %s %s", p1.NICs[0].MAC, p2.NICs[0].MAC, p3.NICs[0].MAC)
	}
	if p1.NICs[1].MAC != "52:54:00:12:34:56" {
		t.Fatalf("the user's MAC was replaced: %s", p1.NICs[1].MAC)
	}
}
