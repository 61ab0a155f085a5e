package apicalls

import (
	"testing"

	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// TestListMatchesPinnedReleases fails when guest/addons/versions.go pins another
// release: check that release's Harvester API calls, edit Calls, then the
// releases above.
func TestListMatchesPinnedReleases(t *testing.T) {
	if CloudProviderRelease != addons.CloudProviderVersion {
		t.Errorf("Calls describe cloud provider %s, the add-ons pin %s", CloudProviderRelease, addons.CloudProviderVersion)
	}
	if CSIDriverRelease != addons.CSIDriverVersion {
		t.Errorf("Calls describe CSI driver %s, the add-ons pin %s", CSIDriverRelease, addons.CSIDriverVersion)
	}
}

func TestCallsAreWellFormed(t *testing.T) {
	seen := map[Call]bool{}
	for _, c := range Calls {
		if c.Component != CCM && c.Component != CSI {
			t.Errorf("%+v: unknown component", c)
		}
		if c.Verb == "" || c.Resource == "" || c.Why == "" {
			t.Errorf("%+v: verb, resource and why are required", c)
		}
		if c.ClusterScoped && c.Namespace != "" {
			t.Errorf("%+v: a cluster-scoped call has no namespace", c)
		}
		key := c
		key.Why = ""
		if seen[key] {
			t.Errorf("%+v listed twice", c)
		}
		seen[key] = true
	}
}
