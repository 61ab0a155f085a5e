package doctor

import (
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
)

// driverRules are the rules a credential with the given needs shows.
func driverRules(needs ...driverrights.Need) []authv1.ResourceRule {
	ns, cluster := driverrights.PolicyRules(driverrights.Of(needs...))
	var out []authv1.ResourceRule
	for _, r := range append(ns, cluster...) {
		out = append(out, authv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return out
}

func TestDriverRows(t *testing.T) {
	exp := now.Add(30 * 24 * time.Hour)
	soon := now.Add(2 * 24 * time.Hour)
	auth := clusterstate.Auth{Source: "--driver-kubeconfig", Kind: clusterstate.CredJWT, User: "system:serviceaccount:default:d"}
	cases := []struct {
		name   string
		driver clusterstate.DriverCredential
		check  string
		want   Status
		seen   string
	}{
		{"does not expire", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: driverRules(driverrights.Always, driverrights.Checks)},
			CheckDriverCredential, OK, "does not expire"},
		{"expires", clusterstate.DriverCredential{Auth: withExpiry(auth, &exp), Namespace: "default", Rules: driverRules(driverrights.Always)},
			CheckDriverCredential, OK, "expires " + exp.Format(time.RFC3339)},
		{"expires soon", clusterstate.DriverCredential{Auth: withExpiry(auth, &soon), Namespace: "default", Rules: driverRules(driverrights.Always)},
			CheckDriverCredential, Warn, "under 7 days"},
		{"rejected", clusterstate.DriverCredential{Auth: clusterstate.Auth{Source: "--driver-kubeconfig", Kind: clusterstate.CredToken, Err: "Unauthorized", Rejected: true}, Namespace: "default"},
			CheckDriverCredential, Fail, "401"},
		{"exact", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: driverRules(driverrights.Always, driverrights.Checks, driverrights.Repairs)},
			CheckDriverRights, OK, "exactly the driver's rights in namespace default (without those of --harvester-cloud-provider)"},
		{"exact with cloud provider", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: driverRules(driverrights.Always, driverrights.Checks, driverrights.Repairs, driverrights.CloudProvider)},
			CheckDriverRights, OK, "(with those"},
		{"cluster admin", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: []authv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
			CheckDriverRights, Fail, "may * clusterrolebindings.rbac.authorization.k8s.io, * clusterroles.rbac.authorization.k8s.io: with that it can delete any ClusterRoleBinding"},
		{"made before issue 28", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: append(driverRules(driverrights.Always, driverrights.Checks, driverrights.CloudProvider),
			authv1.ResourceRule{Verbs: []string{"get", "create", "patch"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"}})},
			CheckDriverRights, Fail, "may create clusterrolebindings.rbac.authorization.k8s.io, get clusterrolebindings"},
		{"made before rm released the orphaned VM instance's finalizer", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: driverRules(driverrights.Always, driverrights.Checks)},
			CheckDriverRights, Warn, "may not, in namespace default: patch virtualmachineinstances.kubevirt.io (rm then cannot release Harvester's finalizer wrangler.cattle.io/VMController.BackfillObservedNetworkMacAddress"},
		{"more than needed", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: append(driverRules(driverrights.Always, driverrights.Checks, driverrights.Repairs),
			authv1.ResourceRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"configmaps"}})},
			CheckDriverRights, Warn, "may do more than the driver needs in namespace default"},
		{"missing", clusterstate.DriverCredential{Auth: auth, Namespace: "default", Rules: driverRules(driverrights.Checks)},
			CheckDriverRights, Fail, "may not, in namespace default: get virtualmachines.kubevirt.io"},
		{"no review", clusterstate.DriverCredential{Auth: auth, Namespace: "default", RulesErr: "forbidden"},
			CheckDriverRights, Warn, "forbidden"},
	}
	for _, c := range cases {
		s := healthy()
		d := c.driver
		s.Driver = &d
		row := Run(s).Row(c.check)
		if row == nil {
			t.Errorf("%s: no %s row", c.name, c.check)
			continue
		}
		if row.Status != c.want || !strings.Contains(row.Seen, c.seen) {
			t.Errorf("%s: %s = %s %q, want %s containing %q", c.name, c.check, row.Status, row.Seen, c.want, c.seen)
		}
		if row.Status != OK && row.Fix == "" {
			t.Errorf("%s: %s without a fix", c.name, row.Status)
		}
	}
}

func withExpiry(a clusterstate.Auth, t *time.Time) clusterstate.Auth {
	a.Expires = t
	return a
}
