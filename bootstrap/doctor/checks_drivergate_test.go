package doctor

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
)

func TestDriverGate(t *testing.T) {
	serving := []string{"drivers/drv"}
	for _, c := range []struct {
		name   string
		gate   clusterstate.DriverGate
		status Status
		seen   string
	}{
		{"none", clusterstate.DriverGate{}, OK, "no driver credential serves"},
		{"in place", clusterstate.DriverGate{Serving: serving}, OK, "with their admission policy"},
		{"no policy", clusterstate.DriverGate{Serving: serving, NoPolicy: []string{"drivers/drv (ValidatingAdmissionPolicy x missing)"}}, Fail, "may mint a token for any ServiceAccount"},
		{"wide token", clusterstate.DriverGate{Serving: serving, Reach: []credentials.Reach{{Secret: "default/wide-token", ServiceAccount: "wide", Binding: "ClusterRoleBinding x"}}}, Fail, "default/wide-token"},
		{"their binding", clusterstate.DriverGate{Serving: serving, NotMadeByTool: []string{"RoleBinding default/all of harvesterhci.io:csi-driver", "token Secret default/t of ServiceAccount app"}}, Fail, "RoleBinding default/all"},
		{"their token", clusterstate.DriverGate{Serving: serving, NotMadeByTool: []string{"token Secret default/t of ServiceAccount app"}}, Warn, "default/t"},
		{"not listed", clusterstate.DriverGate{Err: "forbidden"}, Warn, "forbidden"},
	} {
		s := healthy()
		s.DriverGate = &c.gate
		row := DriverGate(s)
		if row.Status != c.status || !strings.Contains(row.Seen, c.seen) {
			t.Errorf("%s: %s %q, want %s containing %q", c.name, row.Status, row.Seen, c.status, c.seen)
		}
	}
}
