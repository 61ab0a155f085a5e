package tools

import (
	"strings"
	"testing"
)

// harvesterOwnPins are the modules test/tools/harvester keeps at
// Harvester's pin although the project's go.mod has another version, and
// why (its go.mod says more).
var harvesterOwnPins = map[string]string{
	"github.com/rancher/lasso": "the controllers' cache library: the webhook's caches behave as on Harvester",
}

// TestHarvesterToolFollowsTheProject: harvester-webhook (test/tools/harvester)
// is the Harvester release the product builds against, and every module both
// go.mods require (k8s.io above all) is at the project's version but the few
// kept at Harvester's pin, so the Go build cache compiles what they share
// once. With Harvester's own pins (k8s.io v0.33.7) next to nothing would be
// shared.
func TestHarvesterToolFollowsTheProject(t *testing.T) {
	project, tool := goModVersions(t, "../../go.mod"), goModVersions(t, "harvester/go.mod")
	if tool["github.com/harvester/harvester"] != project["github.com/harvester/harvester"] {
		t.Errorf("test/tools/harvester builds harvester %s; the project's go.mod requires %s: move them together",
			tool["github.com/harvester/harvester"], project["github.com/harvester/harvester"])
	}
	k8s := 0
	for m, v := range tool {
		pv, ok := project[m]
		if !ok {
			continue
		}
		if strings.HasPrefix(m, "k8s.io/") {
			k8s++
		}
		if _, own := harvesterOwnPins[m]; !own && pv != v {
			t.Errorf("test/tools/harvester/go.mod has %s %s; the project's go.mod %s: align them", m, v, pv)
		}
	}
	if k8s < 10 {
		t.Errorf("test/tools/harvester shares %d k8s.io modules with the project: want k8s.io aligned", k8s)
	}
	for m, why := range harvesterOwnPins {
		if tool[m] == project[m] {
			t.Errorf("test/tools/harvester keeps %s at Harvester's pin (%s), but it is the project's %s now: drop it from harvesterOwnPins", m, why, project[m])
		}
	}
}
