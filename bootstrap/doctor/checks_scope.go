package doctor

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Check names of what the guest credential may reach.
const (
	CheckCredentialScope = "credential-scope"
	CheckNamespaceShared = "namespace-shared"
)

// CredentialScope: the guest credential reaches nothing outside its VM
// namespace: no cluster-wide binding of harvesterhci.io:csi-driver (with
// one, its token may patch every VM and touch every snapshot in every
// namespace), and the namespace has its grant for the reads outside it,
// naming the cluster's ServiceAccounts and no subject but the namespace's
// guest ServiceAccounts (a group or another ServiceAccount would get the
// guests' NFS rights in harvester-system).
func CredentialScope(s *clusterstate.Snapshot) Row {
	h := harvesterView{&s.Harvester}
	if row, bad := unlisted(h.Errors, CheckCredentialScope, clusterstate.KindServiceAccount, clusterstate.KindClusterRoleBinding, clusterstate.KindRoleBinding); bad {
		return row
	}
	if len(h.ServiceAccounts) == 0 {
		return warn(CheckCredentialScope, "no credential of the cluster", "see the "+CheckCredential+" row")
	}
	var wide []string
	for _, sa := range h.ServiceAccounts {
		a := credentials.Access{ClusterName: h.Cluster, Namespace: h.Namespace, ServiceAccount: sa.Name}
		if clusterWide(h, a) {
			wide = append(wide, sa.Name)
		}
	}
	if len(wide) > 0 {
		return warn(CheckCredentialScope, fmt.Sprintf("%s bound cluster-wide (ClusterRoleBinding) for %s: its token may patch every VM (disks, cloud-init, run strategy) and touch every snapshot and backup in every namespace",
			harvester.CSIDriverRole, names(wide)),
			"bind it in "+h.Namespace+" only: `harvester-bootstrap kubeconfig rotate --cluster-name "+h.Cluster+" --namespace "+h.Namespace+
				"` (or `driver-credential --cloud-provider --machine-namespace "+h.Namespace+"` for the driver's credentials); --csi-cluster-wide keeps it on purpose")
	}
	if !slices.ContainsFunc(h.GrantBindings, func(b rbacv1.ClusterRoleBinding) bool { return b.Name == credentials.GrantBindingName(h.Namespace) }) {
		return fail(CheckCredentialScope, "namespace "+h.Namespace+" has no grant "+credentials.GrantBindingName(h.Namespace)+
			": the CSI driver cannot read storage classes, volume attachments or its settings, nor list shared and Longhorn volumes",
			"an admin grants it once per VM namespace: "+h.issueCmd()+" or `harvester-bootstrap driver-credential --cloud-provider --machine-namespace "+h.Namespace+"`")
	}
	if row, bad := grantSubjectsRow(h); bad {
		return row
	}
	return ok(CheckCredentialScope, harvester.CSIDriverRole+" and "+harvester.CloudProviderRole+" bound in "+h.Namespace+" only; reads outside it from "+credentials.GrantBindingName(h.Namespace))
}

// grantSubjectsRow fails a grant binding naming anyone but the namespace's
// guest ServiceAccounts, or missing one of the cluster's.
func grantSubjectsRow(h harvesterView) (Row, bool) {
	fix := "rewrite the grant's subjects to the guest ServiceAccounts of " + h.Namespace + ": " + h.issueCmd() +
		" (or `harvester-bootstrap driver-credential --cloud-provider --machine-namespace " + h.Namespace + "`)"
	type binding struct {
		name     string
		subjects []rbacv1.Subject
	}
	var bindings []binding
	for _, b := range h.GrantBindings {
		if b.Name == credentials.GrantBindingName(h.Namespace) {
			bindings = append(bindings, binding{"ClusterRoleBinding " + b.Name, b.Subjects})
		}
	}
	for _, b := range h.GrantRoleBindings {
		bindings = append(bindings, binding{"RoleBinding " + b.Namespace + "/" + b.Name, b.Subjects})
	}
	var problems []string
	for _, b := range bindings {
		if foreign := credentials.ForeignGrantSubjects(h.Namespace, b.subjects, h.GuestServiceAccounts); len(foreign) > 0 {
			problems = append(problems, b.name+" names "+strings.Join(foreign, ", "))
		}
	}
	if len(problems) > 0 {
		return fail(CheckCredentialScope, "the grant of namespace "+h.Namespace+" reaches beyond its guest credentials (each such subject gets the guests' rights outside "+
			h.Namespace+", among them every networkfilesystem in harvester-system): "+strings.Join(problems, "; "), fix), true
	}
	var missing []string
	for _, sa := range h.ServiceAccounts {
		want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: h.Namespace}
		for _, b := range bindings {
			if !slices.Contains(b.subjects, want) {
				missing = append(missing, sa.Name+" in "+b.name)
			}
		}
	}
	if len(missing) > 0 {
		return fail(CheckCredentialScope, "the grant of namespace "+h.Namespace+" does not name the cluster's ServiceAccount "+strings.Join(missing, ", ")+
			": its CSI driver cannot read storage classes, volume attachments or its settings", fix), true
	}
	return Row{}, false
}

// NamespaceShared: other guest clusters' VMs in the VM namespace. Their
// credentials are bound in the same namespace, so each may patch the
// others' VMs and attach or detach their volumes: RBAC cannot tell them
// apart.
func NamespaceShared(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckNamespaceShared, clusterstate.KindVM); bad {
		return row
	}
	var others []string
	for _, vm := range h.VMs {
		if c := vm.Labels[harvester.LabelGuestCluster]; c != "" && !h.OfCluster(vm.Labels) && !slices.Contains(others, c) {
			others = append(others, c)
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		return warn(CheckNamespaceShared, fmt.Sprintf("namespace %s also holds VMs of guest cluster(s) %s: each cluster's credential may patch the others' VMs and attach or detach their volumes",
			h.Namespace, names(others)), "give each guest cluster a namespace of its own (docs/bootstrap.md)")
	}
	return ok(CheckNamespaceShared, "no other guest cluster's VMs in "+h.Namespace)
}
