package credentials

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// A driver credential may read every Secret of the namespaces it serves:
// reads cannot be narrowed by name. So no token Secret there may belong to
// a ServiceAccount that reaches outside the namespace (a --csi-cluster-wide
// guest credential, one made before the RoleBinding, or anyone's bound by a
// ClusterRoleBinding or in another namespace). `kubeconfig` and
// `driver-credential` refuse to bring the two together; doctor fails it.

// LabelDriverCredential marks every object of one driver credential
// (bootstrap/drivercred); the value is DriverIdentity.LabelValue.
const LabelDriverCredential = "harvester-bootstrap.harvesterhci.io/driver-credential"

// Reach is a token Secret of a namespace whose ServiceAccount is bound
// outside it.
type Reach struct {
	Secret, ServiceAccount string // the token Secret ns/name and its ServiceAccount
	Binding                string // what binds it outside: "ClusterRoleBinding x" or "RoleBinding ns/x"
	// Migratable: a guest credential of this tool bound cluster-wide
	// (--csi-cluster-wide, or made before the RoleBinding), which
	// MigrateNamespace moves into its namespace.
	Migratable bool
}

func (r Reach) String() string {
	return fmt.Sprintf("token Secret %s of ServiceAccount %s, bound outside its namespace by %s", r.Secret, r.ServiceAccount, r.Binding)
}

// bindsSAOf reports whether subjects include ServiceAccount sa of ns (or
// all ServiceAccounts of ns). What every ServiceAccount of the cluster
// holds (system:serviceaccounts) the driver's own has.
func bindsSAOf(subjects []rbacv1.Subject, ns, sa string) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			return s.Namespace == ns && s.Name == sa
		case rbacv1.GroupKind:
			return s.Name == serviceaccount.MakeNamespaceGroupName(ns)
		}
		return false
	})
}

// isGrantBinding reports whether labels and name are ns's namespace grant
// (the documented reads outside the namespace every guest needs).
func isGrantBinding(labels map[string]string, name, ns string) bool {
	return labels[addons.LabelManagedBy] == addons.ManagedBy && labels[LabelGuestNamespace] == ns && name == GrantBindingName(ns)
}

// isOwnDriverBinding reports whether labels mark a binding of the driver
// credential of ServiceAccount sa of ns: reading its own token gives a
// driver credential nothing.
func isOwnDriverBinding(labels map[string]string, ns, sa string) bool {
	return labels[addons.LabelManagedBy] == addons.ManagedBy && labels[LabelDriverCredential] == (DriverIdentity{Namespace: ns, ServiceAccount: sa}).LabelValue()
}

// ReachingOutside is the token Secrets of namespace ns whose ServiceAccount
// a ClusterRoleBinding, or a RoleBinding of another namespace, binds;
// the namespace grant and a driver credential's own bindings do not count
// (another driver credential's do).
func ReachingOutside(ns string, tokens []corev1.Secret, crbs []rbacv1.ClusterRoleBinding, rbs []rbacv1.RoleBinding) []Reach {
	var out []Reach
	for _, sec := range tokens {
		if sec.Namespace != ns || sec.Type != corev1.SecretTypeServiceAccountToken {
			continue
		}
		sa := sec.Annotations[corev1.ServiceAccountNameKey]
		r := Reach{Secret: ns + "/" + sec.Name, ServiceAccount: sa}
		for _, b := range crbs {
			if bindsSAOf(b.Subjects, ns, sa) && !isGrantBinding(b.Labels, b.Name, ns) && !isOwnDriverBinding(b.Labels, ns, sa) {
				a := Access{ClusterName: b.Labels[LabelCluster], Namespace: ns, ServiceAccount: sa}
				r.Binding = "ClusterRoleBinding " + b.Name
				r.Migratable = IsOwned(b.Labels, a.ClusterName) && b.Name == a.ClusterRoleBindingName() && bindsOnly(b.Subjects, a) && IsGuestTokenSecret(sec)
				out = append(out, r)
			}
		}
		for _, b := range rbs {
			if b.Namespace != ns && bindsSAOf(b.Subjects, ns, sa) && !isGrantBinding(b.Labels, b.Name, ns) && !isOwnDriverBinding(b.Labels, ns, sa) {
				r.Binding, r.Migratable = "RoleBinding "+b.Namespace+"/"+b.Name, false
				out = append(out, r)
			}
		}
	}
	return out
}

// ReachingOutside lists what ReachingOutside needs and applies it to ns.
func (h *Harvester) ReachingOutside(ctx context.Context, ns string) ([]Reach, error) {
	tokens, err := h.Client.Secrets(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()})
	if err != nil {
		return nil, fmt.Errorf("list token Secrets in %s: %w", ns, err)
	}
	if len(tokens.Items) == 0 {
		return nil, nil
	}
	crbs, err := h.Client.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ClusterRoleBindings: %w", err)
	}
	rbs, err := h.Client.RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list RoleBindings: %w", err)
	}
	return ReachingOutside(ns, tokens.Items, crbs.Items, rbs.Items), nil
}

// DriverCredentialsServing names the driver credentials whose RoleBinding
// is in ns (their Roles grant reading every Secret there).
func (h *Harvester) DriverCredentialsServing(ctx context.Context, ns string) ([]string, error) {
	rbs, err := h.Client.RoleBindings(ns).List(ctx, metav1.ListOptions{LabelSelector: addons.LabelManagedBy + "=" + addons.ManagedBy + "," + LabelDriverCredential})
	if err != nil {
		return nil, fmt.Errorf("list the driver credentials' RoleBindings in %s: %w", ns, err)
	}
	var out []string
	for _, rb := range rbs.Items {
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind {
				out = append(out, s.Namespace+"/"+s.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CheckClusterWide refuses a --csi-cluster-wide credential a (nil for a
// confined one) in a namespace a driver credential serves: the driver
// could read its token, which reaches every namespace.
func (h *Harvester) CheckClusterWide(ctx context.Context, a Access) error {
	if !a.CSIClusterWide {
		return nil
	}
	served, err := h.DriverCredentialsServing(ctx, a.Namespace)
	if err != nil {
		return err
	}
	if len(served) > 0 {
		return field.Invalid(FieldCSIClusterWide, "true", "namespace %s is served by the driver credential(s) %s, which may read every Secret there: "+
			"this credential's token would reach every namespace through them; leave --csi-cluster-wide out (the default binds %s in %s only), or put the guest in a namespace no driver credential serves",
			a.Namespace, strings.Join(served, ", "), harvester.CSIDriverRole, a.Namespace)
	}
	return nil
}
