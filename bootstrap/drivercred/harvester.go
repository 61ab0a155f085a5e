package drivercred

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// Harvester makes, rotates and revokes driver credentials.
type Harvester struct {
	Kube kubernetes.Interface
	// Config is the admin's; revoke uses its server and CA to see the
	// revoked token rejected (nil: it does not wait for that).
	Config *rest.Config
	Log    *slog.Logger
}

// handle is one object of a credential, its API calls, and the object
// wanted (nil: only deleted).
type handle struct {
	restapi.Named
	obj runtime.Object
}

var applyOpts = metav1.PatchOptions{FieldManager: addons.FieldManager, Force: ptr.To(true)}

// kinds is the credential's kinds over a client-go clientset: its typed
// clients are restapi Resources, so restapi.NamedOf maps kinds to clients
// for this package as for guest/credentials.
type kinds struct{ kube kubernetes.Interface }

func (k kinds) ServiceAccounts(ns string) restapi.ServiceAccounts {
	return k.kube.CoreV1().ServiceAccounts(ns)
}

func (k kinds) Secrets(ns string) restapi.Resource[*corev1.Secret, *corev1.SecretList] {
	return k.kube.CoreV1().Secrets(ns)
}

func (k kinds) Roles(ns string) restapi.Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return k.kube.RbacV1().Roles(ns)
}

func (k kinds) RoleBindings(ns string) restapi.Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return k.kube.RbacV1().RoleBindings(ns)
}

func (k kinds) ClusterRoles() restapi.Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return k.kube.RbacV1().ClusterRoles()
}

func (k kinds) ClusterRoleBindings() restapi.Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return k.kube.RbacV1().ClusterRoleBindings()
}

func (k kinds) ValidatingAdmissionPolicies() restapi.Resource[*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyList] {
	return k.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
}

func (k kinds) ValidatingAdmissionPolicyBindings() restapi.Resource[*admissionv1.ValidatingAdmissionPolicyBinding, *admissionv1.ValidatingAdmissionPolicyBindingList] {
	return k.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
}

// handle of kind ns/name (ns "" for cluster-scoped kinds) wanting obj.
func (h *Harvester) handle(kind, ns, name string, obj runtime.Object) handle {
	n, _ := restapi.NamedOf(kinds{h.Kube}, kind, ns, name) // every kind here has a client (TestHandlesHaveClients)
	return handle{n, obj}
}

// apply server-side applies the wanted object.
func (x handle) apply(ctx context.Context, b []byte) error {
	_, err := x.Patch(ctx, types.ApplyPatchType, b, applyOpts)
	return err
}

// handles are the credential's objects, in creation order.
func (h *Harvester) handles(s Spec) []handle {
	o := Build(s)
	out := []handle{
		h.handle("ValidatingAdmissionPolicy", "", s.Identity().PolicyName(), o.Policy),
		h.handle("ValidatingAdmissionPolicyBinding", "", s.Identity().PolicyName(), o.PolicyBinding),
	}
	if o.GrantPolicy != nil {
		out = append(out, h.handle("ValidatingAdmissionPolicy", "", o.GrantPolicy.Name, o.GrantPolicy))
		for _, b := range o.GrantPolicyBindings {
			out = append(out, h.handle("ValidatingAdmissionPolicyBinding", "", b.Name, b))
		}
	}
	out = append(out,
		h.handle("ServiceAccount", s.Namespace, s.ServiceAccount, o.ServiceAccount),
		h.handle("ClusterRole", "", s.RBACName(), o.ClusterRole),
		h.handle("ClusterRoleBinding", "", s.RBACName(), o.ClusterRoleBinding),
	)
	for i, ns := range s.MachineNamespaces {
		out = append(out, h.handle("Role", ns, s.RBACName(), o.Roles[i]), h.handle("RoleBinding", ns, s.RBACName(), o.RoleBindings[i]))
	}
	return append(out, h.handle("Secret", s.Namespace, s.TokenSecretName(), o.TokenSecret))
}

// notOwned refuses to change an existing object the credential did not
// create; nil when it does not exist or is the credential's. It also
// reports whether the object exists.
func notOwned(ctx context.Context, s Spec, x handle) (bool, error) {
	obj, err := x.Get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get %s: %w", x, err)
	case !s.Owns(obj.GetLabels()):
		return true, field.Problem(FieldServiceAccount, "%s exists and was not created by harvester-bootstrap driver-credential for service account %s/%s (labels %s); refusing to change it: choose another service account name or remove it",
			x, s.Namespace, s.ServiceAccount, s.Selector())
	}
	return true, nil
}

// Ensure creates or updates, idempotently (server-side apply), every
// object of the credential, after checking that every namespace it uses
// exists and that none of its names is taken by an object it did not create
// (then it changes nothing). When an apply fails, what this run created is
// deleted again. Roles and RoleBindings it made in namespaces no longer
// listed are deleted.
func (h *Harvester) Ensure(ctx context.Context, s Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	hs := h.handles(s)
	errs := h.missingNamespaces(ctx, s)
	fresh := map[int]bool{}
	for i, x := range hs {
		exists, err := notOwned(ctx, s, x)
		fresh[i] = !exists
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, x := range hs {
		if err := h.apply(ctx, x); err != nil {
			var made []handle
			for j := range i + 1 {
				if fresh[j] {
					made = append(made, hs[j])
				}
			}
			return errors.Join(err, h.undo(ctx, s, made))
		}
	}
	stale, err := h.namespaced(ctx, s, func(ns string) bool { return !slices.Contains(s.MachineNamespaces, ns) })
	if err != nil {
		return err
	}
	gate, err := h.grantGate(ctx, s, func(ns string) bool {
		return !s.CloudProvider || (ns != "" && !slices.Contains(s.MachineNamespaces, ns))
	})
	if err != nil {
		return err
	}
	if _, err = h.deleteAll(ctx, s, append(stale, gate...)); err != nil {
		return err
	}
	return h.waitPolicyInEffect(ctx, s)
}

func (h *Harvester) apply(ctx context.Context, x handle) error {
	b, err := json.Marshal(x.obj)
	if err == nil {
		err = x.apply(ctx, b)
	}
	if err != nil {
		return fmt.Errorf("apply %s: %w", x, err)
	}
	h.Log.Info("applied", "object", x.String())
	return nil
}

// undo deletes what a failed Ensure created, newest first.
func (h *Harvester) undo(ctx context.Context, s Spec, made []handle) error {
	slices.Reverse(made)
	if _, err := h.deleteAll(ctx, s, made); err != nil {
		return fmt.Errorf("remove what this run made: %w", err)
	}
	return nil
}

// missingNamespaces are the namespaces the credential needs that do not
// exist (one problem each, naming the flag's field).
func (h *Harvester) missingNamespaces(ctx context.Context, s Spec) []error {
	type use struct{ ns, field string }
	uses := []use{{s.Namespace, FieldNamespace}}
	for _, ns := range s.MachineNamespaces {
		uses = append(uses, use{ns, FieldMachineNamespaces})
	}
	if s.CloudProvider {
		for _, ns := range credentials.SharedNamespaces() {
			uses = append(uses, use{ns, "Harvester namespace"})
		}
	}
	var errs []error
	seen := map[string]bool{}
	for _, u := range uses {
		if seen[u.ns] {
			continue
		}
		seen[u.ns] = true
		_, err := h.Kube.CoreV1().Namespaces().Get(ctx, u.ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, field.Invalid(u.field, u.ns, "no such namespace on Harvester; create it first or name an existing one"))
		case err != nil:
			errs = append(errs, fmt.Errorf("get namespace %s: %w", u.ns, err))
		}
	}
	return errs
}

// namespaced are the credential's Roles and RoleBindings in the namespaces
// keep selects: found by its labels in every namespace, and kept only with
// the name it derives (and, for bindings, its Role and ServiceAccount), so
// someone else's object that merely carries the labels is never deleted.
func (h *Harvester) namespaced(ctx context.Context, s Spec, keep func(ns string) bool) ([]handle, error) {
	sel := metav1.ListOptions{LabelSelector: s.Selector()}
	roles, err := h.Kube.RbacV1().Roles(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list Roles %s: %w", s.Selector(), err)
	}
	bindings, err := h.Kube.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list RoleBindings %s: %w", s.Selector(), err)
	}
	var out []handle
	for _, r := range bindings.Items {
		if keep(r.Namespace) && s.OwnsBinding(r) {
			out = append(out, h.handle("RoleBinding", r.Namespace, r.Name, nil))
		}
	}
	for _, r := range roles.Items {
		if keep(r.Namespace) && r.Name == s.RBACName() {
			out = append(out, h.handle("Role", r.Namespace, r.Name, nil))
		}
	}
	return out, nil
}

// grantGate are the credential's grant policy bindings, found by its labels,
// of the machine namespaces drop selects, and its grant policy when
// drop("") (deleteAll skips what does not exist).
func (h *Harvester) grantGate(ctx context.Context, s Spec, drop func(ns string) bool) ([]handle, error) {
	id := s.Identity()
	bindings, err := h.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{LabelSelector: s.Selector()})
	if err != nil {
		return nil, fmt.Errorf("list ValidatingAdmissionPolicyBindings %s: %w", s.Selector(), err)
	}
	var out []handle
	for _, b := range bindings.Items {
		if p := b.Spec.ParamRef; b.Spec.PolicyName == id.GrantPolicyName() && p != nil && b.Name == id.GrantPolicyBindingName(p.Namespace) && drop(p.Namespace) {
			out = append(out, h.handle("ValidatingAdmissionPolicyBinding", "", b.Name, nil))
		}
	}
	if drop("") {
		out = append(out, h.handle("ValidatingAdmissionPolicy", "", id.GrantPolicyName(), nil))
	}
	return out, nil
}

// deleteAll deletes each object that exists and is the credential's (by
// UID, then watching until it is gone); others are reported, untouched.
func (h *Harvester) deleteAll(ctx context.Context, s Spec, hs []handle) ([]string, error) {
	var deleted []string
	var errs []error
	for _, x := range hs {
		obj, err := x.Get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s: %w", x, err))
			continue
		case !s.Owns(obj.GetLabels()):
			errs = append(errs, fmt.Errorf("%s exists but was not created by harvester-bootstrap driver-credential for service account %s/%s; left untouched", x, s.Namespace, s.ServiceAccount))
			continue
		}
		if err := x.DeleteAndWait(ctx, obj.GetUID()); err != nil {
			errs = append(errs, err)
			continue
		}
		h.Log.Info("deleted", "object", x.String())
		deleted = append(deleted, x.String())
	}
	return deleted, errors.Join(errs...)
}

// Rotate replaces the token: it deletes the token Secret and the
// ServiceAccount (a legacy token carries no issue time, so only a new
// ServiceAccount UID yields a different one; every earlier token, Secret
// or TokenRequest, stops working) and makes the credential again.
func (h *Harvester) Rotate(ctx context.Context, s Spec) error {
	if err := s.Validate(); err != nil {
		return err
	}
	sa := h.handle("ServiceAccount", s.Namespace, s.ServiceAccount, nil)
	if _, err := sa.Get(ctx); apierrors.IsNotFound(err) {
		return fmt.Errorf("rotate: %s does not exist; run `driver-credential` first", sa)
	}
	old := h.tokenOf(ctx, s)
	if _, err := h.deleteAll(ctx, s, []handle{h.handle("Secret", s.Namespace, s.TokenSecretName(), nil), sa}); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	if err := h.waitRejected(ctx, old); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	return h.Ensure(ctx, s)
}

// Revoked is what Revoke did and found.
type Revoked struct {
	Deleted []string
	// NotMadeByTool are token Secrets and guest-role RoleBindings in the
	// credential's namespaces this tool did not make (NotMadeByTool).
	NotMadeByTool []string
}

// Revoke deletes every token Secret the driver's ServiceAccount made
// (guest credentials it issued: their tokens were readable through it),
// then every object of the credential: those of its names and its Roles
// and RoleBindings in any namespace, each only if it carries the
// credential's labels, the admission policy last. It reports what in its
// namespaces gives a token or a guest role and that this tool did not make.
func (h *Harvester) Revoke(ctx context.Context, s Spec) (Revoked, error) {
	var r Revoked
	if err := s.Validate(); err != nil {
		return r, err
	}
	found, err := h.namespaced(ctx, s, func(ns string) bool { return !slices.Contains(s.MachineNamespaces, ns) })
	if err != nil {
		return r, err
	}
	namespaces := slices.Clone(s.MachineNamespaces)
	for _, x := range found {
		namespaces = append(namespaces, x.Namespace)
	}
	token := h.tokenOf(ctx, s)
	r.Deleted, err = h.deleteIssuedTokens(ctx, s)
	if err == nil {
		hs := h.handles(s)
		slices.Reverse(hs) // the token first, the policies last
		var gate []handle
		gate, err = h.grantGate(ctx, s, func(string) bool { return true })
		var deleted []string
		if err == nil {
			deleted, err = h.deleteAll(ctx, s, append(append(found, hs...), gate...))
		}
		r.Deleted = append(r.Deleted, deleted...)
	}
	if err == nil && len(r.Deleted) > 0 {
		err = h.waitRejected(ctx, token)
	}
	if err == nil {
		r.NotMadeByTool, err = h.NotMadeByTool(ctx, slices.Compact(slices.Sorted(slices.Values(namespaces))))
	}
	if err != nil {
		return r, fmt.Errorf("revoke driver credential %s/%s: %w", s.Namespace, s.ServiceAccount, err)
	}
	return r, nil
}
