package credentials

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/apicalls"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
)

// A guest credential binds Harvester's two roles in its VM namespace only.
// What the pinned cloud provider and CSI driver call outside it (cluster-
// scoped reads: storage classes, volume attachments, two CSI settings; the
// CSI driver's shared-volume objects in harvester-system and Longhorn's
// volumes in longhorn-system) is granted once per VM namespace, by an admin
// (`kubeconfig`, `driver-credential --cloud-provider`): the namespace grant.
// Its bindings name the tool's guest ServiceAccounts of that namespace
// (IsGuestServiceAccount), one subject each, never the namespace's group:
// a ServiceAccount someone else makes there gets nothing from it. Its rules
// derive from guest/apicalls, so they are exactly those calls. The node
// driver never makes a grant; with --cloud-provider its credential may add
// its guest ServiceAccount to one (get and patch on the three bindings by
// name, checked by its admission policy, grantpolicy.go).

// Names of the grant's objects.
const (
	// GuestReadsRole is the ClusterRole of the cluster-scoped reads.
	GuestReadsRole = "harvester-bootstrap:guest-cluster-reads"
	// GuestSharedRole is the Role, in each of apicalls' fixed namespaces,
	// of the calls made there.
	GuestSharedRole = "harvester-bootstrap:guests"
	// LabelGuestNamespace marks a binding of one VM namespace's grant.
	LabelGuestNamespace = "harvester-bootstrap.harvesterhci.io/guest-namespace"
	// LabelGuestGrant marks the grant's shared roles.
	LabelGuestGrant = "harvester-bootstrap.harvesterhci.io/guest-grant"
)

const grantBindingPrefix = "harvester-bootstrap:guest-namespace:"

// GrantBindingName names the bindings of namespace ns's grant.
func GrantBindingName(ns string) string { return grantBindingPrefix + ns }

// GrantNamespaceOf is the namespace whose grant's bindings name is name;
// false for a name GrantBindingName does not make.
func GrantNamespaceOf(name string) (string, bool) {
	ns, ok := strings.CutPrefix(name, grantBindingPrefix)
	return ns, ok && len(validation.IsDNS1123Label(ns)) == 0
}

// GrantEdit are the node driver's rights (driverrights.GrantEdit) to add
// its guest ServiceAccounts to the grants of namespaces.
func GrantEdit(namespaces []string) []driverrights.Permission {
	names := make([]string, len(namespaces))
	for i, ns := range namespaces {
		names[i] = GrantBindingName(ns)
	}
	return driverrights.GrantEdit(names, GuestReadsRole, GuestSharedRole)
}

// SharedNamespaces are the namespaces, other than the VM namespace, that
// guests call into, in a fixed order.
func SharedNamespaces() []string {
	var out []string
	for _, c := range apicalls.Calls {
		if c.Namespace != "" && !slices.Contains(out, c.Namespace) {
			out = append(out, c.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// GrantObjects are the objects of one VM namespace's grant, in creation
// order: the shared ClusterRole and Roles first, then the namespace's
// ClusterRoleBinding and RoleBindings.
type GrantObjects struct {
	ReadsRole    *rbacv1.ClusterRole
	ReadsBinding *rbacv1.ClusterRoleBinding
	SharedRoles  []*rbacv1.Role        // one per SharedNamespaces entry
	SharedGrants []*rbacv1.RoleBinding // one per SharedNamespaces entry
}

// List is the objects in creation order.
func (g GrantObjects) List() []runtime.Object {
	out := []runtime.Object{g.ReadsRole}
	for _, r := range g.SharedRoles {
		out = append(out, r)
	}
	out = append(out, g.ReadsBinding)
	for _, b := range g.SharedGrants {
		out = append(out, b)
	}
	return out
}

// GrantOptions choose what a namespace's grant leaves out.
type GrantOptions struct {
	// NoRWX leaves out the shared (ReadWriteMany) volumes' calls: no
	// binding in the namespaces that only those calls go to (Harvester's
	// networkfilesystems in harvester-system). Those rights are the CSI
	// driver's as Harvester grants them: on every networkfilesystem, so
	// every ServiceAccount of every granted namespace may disable or
	// delete another tenant's. Without them the CSI driver v0.2.9 turns
	// RWX off: it offers MULTI_NODE_MULTI_WRITER only when its start-up
	// list of networkfilesystems succeeds (controller_server.go), and a
	// 403 fails it as a 404 does.
	NoRWX bool
}

// IsRWXCall reports whether c serves only shared (RWX) volumes.
func IsRWXCall(c apicalls.Call) bool {
	return c.Group == "harvesterhci.io" && c.Resource == "networkfilesystems"
}

// rwxOnly reports whether every call into namespace ns serves RWX volumes.
func rwxOnly(ns string) bool {
	for _, c := range apicalls.Calls {
		if c.Namespace == ns && !IsRWXCall(c) {
			return false
		}
	}
	return true
}

// IsGuestServiceAccount reports whether labels mark a ServiceAccount as a
// guest credential's that this tool (or the node driver) made: BuildAccess
// labels it so. The one rule by which the grant names its subjects, doctor
// checks them and the driver's admission policies (CEL guestLabels) accept
// a ServiceAccount.
func IsGuestServiceAccount(labels map[string]string) bool {
	_, ok := labels[LabelCluster]
	return ok && labels[addons.LabelManagedBy] == addons.ManagedBy
}

// GuestServiceAccountSelector selects the candidates of
// IsGuestServiceAccount in a list.
const GuestServiceAccountSelector = addons.LabelManagedBy + "=" + addons.ManagedBy + "," + LabelCluster

// GrantSubjects are the subjects of namespace ns's grant: each guest
// ServiceAccount of ns among sas, by name, sorted; never a group.
func GrantSubjects(ns string, sas []corev1.ServiceAccount) []rbacv1.Subject {
	var names []string
	for _, sa := range sas {
		if sa.Namespace == ns && IsGuestServiceAccount(sa.Labels) {
			names = append(names, sa.Name)
		}
	}
	slices.Sort(names)
	out := []rbacv1.Subject{}
	for _, n := range slices.Compact(names) {
		out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: n, Namespace: ns})
	}
	return out
}

// ForeignGrantSubjects names the subjects of a binding of ns's grant that
// GrantSubjects would not name, given the names of ns's guest
// ServiceAccounts: a group, a user, a ServiceAccount of another namespace,
// or one of ns that is not a guest credential's.
func ForeignGrantSubjects(ns string, subjects []rbacv1.Subject, guests []string) []string {
	var out []string
	for _, s := range subjects {
		switch {
		case s.Kind != rbacv1.ServiceAccountKind:
			out = append(out, strings.ToLower(s.Kind)+" "+s.Name)
		case s.Namespace != ns:
			out = append(out, "ServiceAccount "+s.Namespace+"/"+s.Name+" of another namespace")
		case !slices.Contains(guests, s.Name):
			out = append(out, "ServiceAccount "+s.Namespace+"/"+s.Name+" that is no guest credential of harvester-bootstrap")
		}
	}
	return out
}

// BuildGrant builds the grant of VM namespace ns, bound to subjects
// (GrantSubjects).
func BuildGrant(ns string, o GrantOptions, subjects []rbacv1.Subject) GrantObjects {
	shared := map[string]string{addons.LabelManagedBy: addons.ManagedBy, LabelGuestGrant: "true"}
	own := map[string]string{addons.LabelManagedBy: addons.ManagedBy, LabelGuestNamespace: ns}
	if subjects == nil {
		subjects = []rbacv1.Subject{}
	}
	_, clusterRules := driverrights.PolicyRules(guestPermissions(func(c apicalls.Call) bool { return c.ClusterScoped }))
	g := GrantObjects{
		ReadsRole: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: GuestReadsRole, Labels: shared},
			Rules:      clusterRules,
		},
		ReadsBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: GrantBindingName(ns), Labels: own},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: GuestReadsRole},
			Subjects:   subjects,
		},
	}
	for _, sharedNS := range SharedNamespaces() {
		if o.NoRWX && rwxOnly(sharedNS) {
			continue
		}
		rules, _ := driverrights.PolicyRules(guestPermissions(func(c apicalls.Call) bool { return c.Namespace == sharedNS }))
		g.SharedRoles = append(g.SharedRoles, &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: GuestSharedRole, Namespace: sharedNS, Labels: shared},
			Rules:      rules,
		})
		g.SharedGrants = append(g.SharedGrants, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: GrantBindingName(ns), Namespace: sharedNS, Labels: own},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: GuestSharedRole},
			Subjects:   subjects,
		})
	}
	return g
}

// GrantPermissions are the cluster-scoped rights of every namespace grant.
// A credential that is also a guest ServiceAccount holds them through the
// grant: they are never its excess.
func GrantPermissions() []driverrights.Permission {
	return guestPermissions(func(c apicalls.Call) bool { return c.ClusterScoped })
}

// guestPermissions are the calls keep selects as permissions, in
// apicalls' order.
func guestPermissions(keep func(apicalls.Call) bool) []driverrights.Permission {
	var out []driverrights.Permission
	for _, c := range apicalls.Calls {
		if keep(c) {
			out = append(out, driverrights.Permission{
				Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource,
				Name: c.Name, ClusterScoped: c.ClusterScoped,
			})
		}
	}
	return out
}

// IsGrantObject reports whether labels mark an object of a namespace grant
// (shared role, or the bindings of some namespace).
func IsGrantObject(labels map[string]string) bool {
	return labels[addons.LabelManagedBy] == addons.ManagedBy && (labels[LabelGuestGrant] == "true" || labels[LabelGuestNamespace] != "")
}
