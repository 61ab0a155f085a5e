package credentials

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// object is one object of a credential or a namespace grant, by kind and
// name, with the API calls on it: one place maps a kind to its client.
type object struct {
	kind, resource, ns, name string
	get                      func(context.Context) (metav1.Object, error)
	patch                    func(context.Context, types.PatchType, []byte, metav1.PatchOptions) error
	del                      func(context.Context, metav1.DeleteOptions) error
	watch                    kubeapi.Kind
}

// String names the object as messages do: "RoleBinding ns/name".
func (o object) String() string { return o.kind + " " + o.qualified() }

// qualified is "ns/name", or the name of a cluster-scoped object.
func (o object) qualified() string {
	if o.ns == "" {
		return o.name
	}
	return o.ns + "/" + o.name
}

// ref names the object as revoke reports it: "rolebindings/ns/name".
func (o object) ref() string { return o.resource + "/" + o.qualified() }

func on[T, L runtime.Object](kind, resource, ns, name string, example runtime.Object, c restapi.Resource[T, L]) object {
	return object{kind, resource, ns, name,
		func(ctx context.Context) (metav1.Object, error) {
			o, err := c.Get(ctx, name, metav1.GetOptions{})
			m, _ := any(o).(metav1.Object)
			return m, err
		},
		func(ctx context.Context, pt types.PatchType, b []byte, opts metav1.PatchOptions) error {
			_, err := c.Patch(ctx, name, pt, b, opts)
			return err
		},
		func(ctx context.Context, opts metav1.DeleteOptions) error { return c.Delete(ctx, name, opts) },
		kubeapi.KindOf[L](kind, example, c)}
}

// objectOf is the object of a kind this package makes ("" and false for
// another kind).
func (h *Harvester) objectOf(kind, ns, name string) (object, bool) {
	c := h.Client
	switch kind {
	case "ServiceAccount":
		return on(kind, "serviceaccounts", ns, name, &corev1.ServiceAccount{}, restapi.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList](c.ServiceAccounts(ns))), true
	case "Secret":
		return on(kind, "secrets", ns, name, &corev1.Secret{}, c.Secrets(ns)), true
	case "RoleBinding":
		return on(kind, "rolebindings", ns, name, &rbacv1.RoleBinding{}, c.RoleBindings(ns)), true
	case "Role":
		return on(kind, "roles", ns, name, &rbacv1.Role{}, c.Roles(ns)), true
	case "ClusterRoleBinding":
		return on(kind, "clusterrolebindings", "", name, &rbacv1.ClusterRoleBinding{}, c.ClusterRoleBindings()), true
	case "ClusterRole":
		return on(kind, "clusterroles", "", name, &rbacv1.ClusterRole{}, c.ClusterRoles()), true
	}
	return object{}, false
}

// objectFor is the object of a built one (its TypeMeta names the kind).
func (h *Harvester) objectFor(obj runtime.Object) (object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return object{}, fmt.Errorf("%T is not an object of the credential", obj)
	}
	o, ok := h.objectOf(kindOf(obj), m.GetNamespace(), m.GetName())
	if !ok {
		return object{}, fmt.Errorf("%s %s is not a kind of the credential", kindOf(obj), m.GetName())
	}
	return o, nil
}

// deleteAndWait deletes o if it still has uid and watches until that UID
// is gone.
func (h *Harvester) deleteAndWait(ctx context.Context, o object, uid types.UID) error {
	if err := o.del(ctx, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", o, err)
	}
	_, err := kubeapi.Wait(ctx, o.watch, o.ns, o.name, 0, func(obj runtime.Object) (bool, error) {
		m, ok := obj.(metav1.Object)
		return obj == nil || !ok || m.GetUID() != uid, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to be deleted: %w", o, err)
	}
	return nil
}
