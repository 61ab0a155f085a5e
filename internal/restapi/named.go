package restapi

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// CredentialKinds are the clients of the kinds a credential is made of
// (guest/credentials, bootstrap/drivercred). Interface has them; so has a
// client-go clientset through a small adapter, since its typed clients are
// Resources.
type CredentialKinds interface {
	ServiceAccounts(ns string) ServiceAccounts
	Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList]
	Roles(ns string) Resource[*rbacv1.Role, *rbacv1.RoleList]
	RoleBindings(ns string) Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]
	ClusterRoles() Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList]
	ClusterRoleBindings() Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList]
}

// AdmissionKinds are the clients of admission policies and their bindings,
// which only harvester-bootstrap calls (the driver's scheme has no
// admissionregistration group).
type AdmissionKinds interface {
	ValidatingAdmissionPolicies() Resource[*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyList]
	ValidatingAdmissionPolicyBindings() Resource[*admissionv1.ValidatingAdmissionPolicyBinding, *admissionv1.ValidatingAdmissionPolicyBindingList]
}

// Named is one object by kind and name with the calls made on it: get,
// patch, delete and a watch of its kind.
type Named struct {
	Kind, Resource, Namespace, Name string
	Get                             func(context.Context) (metav1.Object, error)
	Patch                           func(context.Context, types.PatchType, []byte, metav1.PatchOptions) (metav1.Object, error)
	Delete                          func(context.Context, metav1.DeleteOptions) error
	Watch                           kubeapi.Kind
}

// String names the object as messages do: "RoleBinding ns/name".
func (n Named) String() string { return n.Kind + " " + n.Qualified() }

// Qualified is "ns/name", or the name of a cluster-scoped object.
func (n Named) Qualified() string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "/" + n.Name
}

// Ref names the object as revoke reports it: "rolebindings/ns/name".
func (n Named) Ref() string { return n.Resource + "/" + n.Qualified() }

func named[T, L runtime.Object](kind, resource, ns, name string, example runtime.Object, c Resource[T, L]) Named {
	return Named{kind, resource, ns, name,
		func(ctx context.Context) (metav1.Object, error) {
			o, err := c.Get(ctx, name, metav1.GetOptions{})
			m, _ := any(o).(metav1.Object)
			return m, err
		},
		func(ctx context.Context, pt types.PatchType, b []byte, opts metav1.PatchOptions) (metav1.Object, error) {
			o, err := c.Patch(ctx, name, pt, b, opts)
			if err != nil {
				return nil, err
			}
			m, _ := any(o).(metav1.Object)
			return m, nil
		},
		func(ctx context.Context, opts metav1.DeleteOptions) error { return c.Delete(ctx, name, opts) },
		kubeapi.KindOf[L](kind, example, c)}
}

// NamedOf is the one place that maps a credential's kind to its client;
// false for a kind it does not know (or an admission kind when c has no
// AdmissionKinds).
func NamedOf(c CredentialKinds, kind, ns, name string) (Named, bool) {
	switch kind {
	case "ServiceAccount":
		return named(kind, "serviceaccounts", ns, name, &corev1.ServiceAccount{}, Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList](c.ServiceAccounts(ns))), true
	case "Secret":
		return named(kind, "secrets", ns, name, &corev1.Secret{}, c.Secrets(ns)), true
	case "Role":
		return named(kind, "roles", ns, name, &rbacv1.Role{}, c.Roles(ns)), true
	case "RoleBinding":
		return named(kind, "rolebindings", ns, name, &rbacv1.RoleBinding{}, c.RoleBindings(ns)), true
	case "ClusterRole":
		return named(kind, "clusterroles", "", name, &rbacv1.ClusterRole{}, c.ClusterRoles()), true
	case "ClusterRoleBinding":
		return named(kind, "clusterrolebindings", "", name, &rbacv1.ClusterRoleBinding{}, c.ClusterRoleBindings()), true
	}
	a, ok := c.(AdmissionKinds)
	if !ok {
		return Named{}, false
	}
	switch kind {
	case "ValidatingAdmissionPolicy":
		return named(kind, "validatingadmissionpolicies", "", name, &admissionv1.ValidatingAdmissionPolicy{}, a.ValidatingAdmissionPolicies()), true
	case "ValidatingAdmissionPolicyBinding":
		return named(kind, "validatingadmissionpolicybindings", "", name, &admissionv1.ValidatingAdmissionPolicyBinding{}, a.ValidatingAdmissionPolicyBindings()), true
	}
	return Named{}, false
}

// DeleteAndWait deletes the object if it still has uid (NotFound is done)
// and watches until that UID is gone.
func (n Named) DeleteAndWait(ctx context.Context, uid types.UID) error {
	if err := n.Delete(ctx, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", n, err)
	}
	_, err := kubeapi.Wait(ctx, n.Watch, n.Namespace, n.Name, 0, func(obj runtime.Object) (bool, error) {
		m, ok := obj.(metav1.Object)
		return obj == nil || !ok || m.GetUID() != uid, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to be deleted: %w", n, err)
	}
	return nil
}
