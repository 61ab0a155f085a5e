package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Check names of the node driver's credential.
const (
	CheckDriverCredential = "driver-credential"
	CheckDriverRights     = "driver-rights"
)

// maxListed bounds the permissions a row lists.
const maxListed = 8

// Driver: the node driver's kubeconfig (--driver-kubeconfig) authenticates,
// when it expires, and whether its rights in the VM namespace are the
// driver's: none missing, nothing beyond them.
func Driver(s *clusterstate.Snapshot) []Row {
	d := s.Driver
	if d == nil {
		return nil
	}
	renew := "make a credential that does not expire with `harvester-bootstrap driver-credential --namespace " + d.Namespace +
		"` (or `driver-credential rotate`) and put it into Rancher's Harvester cloud credential"
	rejected := &kubeapi.CredentialsRejectedError{Source: d.Source}
	rows := []Row{authRow(CheckDriverCredential, d.Auth, s.Now, rejected.Error()+"; "+renew)}
	if d.Err != "" {
		return rows
	}
	return append(rows, driverRights(d, renew))
}

func driverRights(d *clusterstate.DriverCredential, fix string) Row {
	if d.RulesErr != "" {
		return warn(CheckDriverRights, d.RulesErr, "allow the credential to create selfsubjectrulesreviews (every authenticated user may)")
	}
	if rbac := driverrights.ClusterRBACRights(d.Rules, func(name string) bool { _, ok := credentials.GrantNamespaceOf(name); return ok }); len(rbac) > 0 {
		return fail(CheckDriverRights, fmt.Sprintf("%s may %s: with that it can delete any ClusterRoleBinding (cluster-admin's too: a patch of its ownerReferences is enough) or bind a role to everyone",
			d.Source, listSome(rbac)), "the driver needs no such right: "+fix)
	}
	missing := missingOf(d, driverrights.Of(driverrights.Always))
	if len(missing) > 0 && !d.Incomplete {
		return fail(CheckDriverRights, fmt.Sprintf("%s may not, in namespace %s: %s", d.Source, d.Namespace, listSome(missing)), fix)
	}
	if lacking := missingOf(d, driverrights.Of(driverrights.Repairs)); len(lacking) > 0 && !d.Incomplete {
		return warn(CheckDriverRights, fmt.Sprintf("%s may not, in namespace %s: %s (rm then cannot release Harvester's finalizer %s of a machine's VM instance left running without its VM, and fails naming the kubectl command that does)",
			d.Source, d.Namespace, listSome(lacking), harvester.FinalizerBackfillMAC), "a credential with the driver's rights: "+fix)
	}
	cloudProvider := "without"
	if allAllowed(d, driverrights.Of(driverrights.CloudProvider)) {
		cloudProvider = "with"
	}
	needed := append(driverrights.All(), credentials.GrantPermissions()...)
	needed = append(needed, credentials.GrantEdit(grantsNamed(d))...)
	if excess := driverrights.Excess(d.Rules, needed); len(excess) > 0 {
		return warn(CheckDriverRights, fmt.Sprintf("%s may do more than the driver needs in namespace %s (%d beyond it): %s",
			d.Source, d.Namespace, len(excess), listSome(excess)), "a credential with exactly the driver's rights: "+fix)
	}
	return ok(CheckDriverRights, fmt.Sprintf("%s has exactly the driver's rights in namespace %s (%s those of --harvester-cloud-provider)", d.Source, d.Namespace, cloudProvider))
}

// grantsNamed are the namespaces whose grant bindings d's rules name:
// GrantEdit's rights on them are the driver's, for any machine namespace.
func grantsNamed(d *clusterstate.DriverCredential) []string {
	var out []string
	for _, r := range d.Rules {
		for _, n := range r.ResourceNames {
			if ns, ok := credentials.GrantNamespaceOf(n); ok && !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
	}
	return out
}

// missingOf names the permissions of perms d's rules do not allow.
func missingOf(d *clusterstate.DriverCredential, perms []driverrights.Permission) []string {
	var out []string
	for _, p := range perms {
		if !driverrights.RulesAllow(d.Rules, p) {
			out = append(out, p.String())
		}
	}
	return out
}

func allAllowed(d *clusterstate.DriverCredential, perms []driverrights.Permission) bool {
	for _, p := range perms {
		if !driverrights.RulesAllow(d.Rules, p) {
			return false
		}
	}
	return true
}

func listSome(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(items)-maxListed)
}
