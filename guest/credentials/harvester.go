package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// Harvester is the thin API layer over the Harvester cluster.
type Harvester struct {
	Client restapi.Interface
	Config *rest.Config
	Log    *slog.Logger
}

// NewHarvester connects to the cluster described by cfg.
func NewHarvester(cfg *rest.Config, log *slog.Logger) (*Harvester, error) {
	cs, err := restapi.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Harvester: %w", err)
	}
	return &Harvester{Client: cs, Config: cfg, Log: log}, nil
}

// checkOwned refuses to touch an existing object this tool did not create.
func checkOwned(kind, name string, labels map[string]string, cluster string, err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", kind, name, err)
	}
	if !IsOwned(labels, cluster) {
		return field.Problem(FieldServiceAccount, "%s %s exists and is not managed by harvester-bootstrap for cluster %q (labels %s); refusing to change it: choose another service account name or remove it", kind, name, cluster, Selector(cluster))
	}
	return nil
}

// EnsureAccess creates or updates, idempotently (server-side apply), the
// ServiceAccount, its two bindings (the CSI driver's by RoleBinding, or by
// ClusterRoleBinding with CSIClusterWide) and token Secret. Every name is
// validated first: an invalid one makes no API call; an object of one of
// those names that this tool did not create is refused before any change.
func (h *Harvester) EnsureAccess(ctx context.Context, a Access) error {
	if err := a.Validate(); err != nil {
		return err
	}
	objs := BuildAccess(a).List()
	for _, obj := range objs {
		m := obj.(metav1.Object)
		current, err := h.get(ctx, obj, m.GetNamespace(), m.GetName())
		if err := checkOwned(kindOf(obj), qualified(m), current.GetLabels(), a.ClusterName, err); err != nil {
			return err
		}
	}
	for _, obj := range objs {
		if err := h.apply(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// DropClusterWide deletes the ClusterRoleBinding of harvesterhci.io:
// csi-driver that credentials of a made before the RoleBinding (and
// Harvester's own endpoint) grant cluster-wide, once the RoleBinding
// exists; only when it is this tool's for a's service account. It reports
// whether it deleted one.
func (h *Harvester) DropClusterWide(ctx context.Context, a Access) (bool, error) {
	name := a.ClusterRoleBindingName()
	crb, err := h.Client.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get ClusterRoleBinding %s: %w", name, err)
	case !IsOwned(crb.Labels, a.ClusterName) || !bindsOnly(crb.Subjects, a):
		return false, fmt.Errorf("ClusterRoleBinding %s exists but was not created by harvester-bootstrap for service account %s/%s of cluster %q; left untouched",
			name, a.Namespace, a.ServiceAccount, a.ClusterName)
	}
	if err := h.deleteAndWait(ctx, "clusterrolebindings", "", name, crb.UID, func() error {
		return h.Client.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &crb.UID}})
	}); err != nil {
		return false, err
	}
	h.Log.Info("deleted the cluster-wide binding of "+CSIRoleName+"; the RoleBinding in the VM namespace replaces it", "clusterRoleBinding", name)
	return true, nil
}

// CSIRoleName is Harvester's ClusterRole of the CSI driver, for messages.
const CSIRoleName = harvester.CSIDriverRole

// EnsureGrant creates or updates, idempotently, the grant of VM namespace
// ns (grant.go); an object of one of its names that this tool did not
// create is refused before any change.
func (h *Harvester) EnsureGrant(ctx context.Context, ns string) error {
	objs := BuildGrant(ns).List()
	var errs []error
	for _, obj := range objs {
		m := obj.(metav1.Object)
		current, err := h.get(ctx, obj, m.GetNamespace(), m.GetName())
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s %s: %w", kindOf(obj), qualified(m), err))
		case !IsGrantObject(current.GetLabels()):
			errs = append(errs, fmt.Errorf("%s %s exists and is not managed by harvester-bootstrap; refusing to change it", kindOf(obj), qualified(m)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("grant namespace %s: %w", ns, err)
	}
	for _, obj := range objs {
		if err := h.apply(ctx, obj); err != nil {
			return fmt.Errorf("grant namespace %s: %w", ns, err)
		}
	}
	return nil
}

func qualified(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func kindOf(obj runtime.Object) string { return obj.GetObjectKind().GroupVersionKind().Kind }

// get reads the current object of obj's kind and name.
func (h *Harvester) get(ctx context.Context, obj runtime.Object, ns, name string) (metav1.Object, error) {
	o := metav1.GetOptions{}
	switch obj.(type) {
	case *corev1.ServiceAccount:
		return h.Client.ServiceAccounts(ns).Get(ctx, name, o)
	case *corev1.Secret:
		return h.Client.Secrets(ns).Get(ctx, name, o)
	case *rbacv1.RoleBinding:
		return h.Client.RoleBindings(ns).Get(ctx, name, o)
	case *rbacv1.Role:
		return h.Client.Roles(ns).Get(ctx, name, o)
	case *rbacv1.ClusterRoleBinding:
		return h.Client.ClusterRoleBindings().Get(ctx, name, o)
	case *rbacv1.ClusterRole:
		return h.Client.ClusterRoles().Get(ctx, name, o)
	}
	return nil, fmt.Errorf("get %T: not a kind of the credential", obj)
}

// apply server-side applies obj.
func (h *Harvester) apply(ctx context.Context, obj runtime.Object) error {
	m := obj.(metav1.Object)
	ns, name := m.GetNamespace(), m.GetName()
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", kindOf(obj), qualified(m), err)
	}
	opts := metav1.PatchOptions{FieldManager: addons.FieldManager, Force: ptr.To(true)}
	switch obj.(type) {
	case *corev1.ServiceAccount:
		_, err = h.Client.ServiceAccounts(ns).Patch(ctx, name, types.ApplyPatchType, b, opts)
	case *corev1.Secret:
		_, err = h.Client.Secrets(ns).Patch(ctx, name, types.ApplyPatchType, b, opts)
	case *rbacv1.RoleBinding:
		_, err = h.Client.RoleBindings(ns).Patch(ctx, name, types.ApplyPatchType, b, opts)
	case *rbacv1.Role:
		_, err = h.Client.Roles(ns).Patch(ctx, name, types.ApplyPatchType, b, opts)
	case *rbacv1.ClusterRoleBinding:
		_, err = h.Client.ClusterRoleBindings().Patch(ctx, name, types.ApplyPatchType, b, opts)
	case *rbacv1.ClusterRole:
		_, err = h.Client.ClusterRoles().Patch(ctx, name, types.ApplyPatchType, b, opts)
	default:
		err = fmt.Errorf("not a kind of the credential")
	}
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", kindOf(obj), qualified(m), err)
	}
	h.Log.Info("applied", "object", kindOf(obj)+" "+qualified(m))
	return nil
}

// TokenSecret waits (watch) until the token controller has filled the
// Secret and returns it.
func (h *Harvester) TokenSecret(ctx context.Context, a Access) (*corev1.Secret, error) {
	name := a.TokenSecretName()
	secrets := kubeapi.KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, h.Client.Secrets(a.Namespace))
	h.Log.Info("waiting for the service-account token", "secret", a.Namespace+"/"+name)
	s, err := kubeapi.Wait(ctx, secrets, a.Namespace, name, 0, func(s *corev1.Secret) (bool, error) {
		if s == nil {
			return false, fmt.Errorf("secret %s/%s was deleted while waiting for its token", a.Namespace, name)
		}
		return len(s.Data[corev1.ServiceAccountTokenKey]) > 0, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) {
			return nil, fmt.Errorf("wait for token in secret %s/%s: not filled before the timeout (is the token controller of kube-controller-manager running?): %w", a.Namespace, name, err)
		}
		return nil, fmt.Errorf("wait for token in secret %s/%s: %w", a.Namespace, name, err)
	}
	return s, nil
}

// RequestToken issues a time-bound token (TokenRequest) bound to the
// token Secret, so rotate and revoke invalidate it too.
func (h *Harvester) RequestToken(ctx context.Context, a Access, secret *corev1.Secret, ttl time.Duration) (string, error) {
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(ttl / time.Second)),
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
	}}
	res, err := h.Client.ServiceAccounts(a.Namespace).CreateToken(ctx, a.ServiceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token for %s/%s: %w", a.Namespace, a.ServiceAccount, err)
	}
	h.Log.Info("issued time-bound token", "expires", res.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	return res.Status.Token, nil
}

// Rotate replaces the credentials: it deletes the token Secret and the
// ServiceAccount, waits until both are gone and recreates them. Legacy
// Secret tokens carry no issue time, so only a new ServiceAccount UID
// yields a different token; every token issued before (Secret or
// TokenRequest) stops working. The bindings, referring by name, stay.
func (h *Harvester) Rotate(ctx context.Context, a Access) error {
	name := a.TokenSecretName()
	sec, err := h.Client.Secrets(a.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("rotate: secret %s/%s does not exist; run `kubeconfig` first", a.Namespace, name)
	}
	if err := checkOwned("Secret", a.Namespace+"/"+name, sec.GetLabels(), a.ClusterName, err); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	sa, err := h.Client.ServiceAccounts(a.Namespace).Get(ctx, a.ServiceAccount, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("rotate: service account %s/%s does not exist; run `kubeconfig` first", a.Namespace, a.ServiceAccount)
	}
	if err := checkOwned("ServiceAccount", a.Namespace+"/"+a.ServiceAccount, sa.GetLabels(), a.ClusterName, err); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	if err := h.deleteAndWait(ctx, "secrets", a.Namespace, name, sec.UID, func() error {
		return h.Client.Secrets(a.Namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sec.UID}})
	}); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	if err := h.deleteAndWait(ctx, "serviceaccounts", a.Namespace, a.ServiceAccount, sa.UID, func() error {
		return h.Client.ServiceAccounts(a.Namespace).Delete(ctx, a.ServiceAccount, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sa.UID}})
	}); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	h.Log.Info("deleted old service account and token secret", "namespace", a.Namespace, "serviceAccount", a.ServiceAccount)
	return h.EnsureAccess(ctx, a)
}

// deleteAndWait deletes one object and watches until that UID is gone.
func (h *Harvester) deleteAndWait(ctx context.Context, resource, ns, name string, uid types.UID, del func() error) error {
	if err := del(); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", resource, ns, name, err)
	}
	var k kubeapi.Kind
	switch resource {
	case "secrets":
		k = kubeapi.KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, h.Client.Secrets(ns))
	case "serviceaccounts":
		k = kubeapi.KindOf[*corev1.ServiceAccountList]("ServiceAccount", &corev1.ServiceAccount{}, h.Client.ServiceAccounts(ns))
	case "rolebindings":
		k = kubeapi.KindOf[*rbacv1.RoleBindingList]("RoleBinding", &rbacv1.RoleBinding{}, h.Client.RoleBindings(ns))
	case "roles":
		k = kubeapi.KindOf[*rbacv1.RoleList]("Role", &rbacv1.Role{}, h.Client.Roles(ns))
	case "clusterroles":
		k = kubeapi.KindOf[*rbacv1.ClusterRoleList]("ClusterRole", &rbacv1.ClusterRole{}, h.Client.ClusterRoles())
	default:
		k = kubeapi.KindOf[*rbacv1.ClusterRoleBindingList]("ClusterRoleBinding", &rbacv1.ClusterRoleBinding{}, h.Client.ClusterRoleBindings())
	}
	_, err := kubeapi.Wait(ctx, k, ns, name, 0, func(obj runtime.Object) (bool, error) {
		m, ok := obj.(metav1.Object)
		return obj == nil || !ok || m.GetUID() != uid, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s %s/%s to be deleted: %w", resource, ns, name, err)
	}
	return nil
}

// Revoke deletes exactly what EnsureAccess created for the service account
// a.ServiceAccount of the cluster: its ServiceAccount, RoleBindings,
// ClusterRoleBinding (either mode, and credentials made before the
// RoleBinding) and token Secret, each only if it carries this tool's
// labels for the cluster and (bindings, Secret) refers to that service
// account. Other service accounts of the cluster are not touched; an object
// of one of those names that is not this tool's is left alone and reported
// in the error. It returns what it deleted.
func (h *Harvester) Revoke(ctx context.Context, a Access) ([]string, error) {
	victims, errs := h.revokeVictims(ctx, a)
	var deleted []string
	for _, v := range victims {
		if err := h.deleteAndWait(ctx, v.resource, v.ns, v.name, v.uid, v.del); err != nil {
			errs = append(errs, err)
			continue
		}
		id := v.resource + "/" + v.name
		if v.ns != "" {
			id = v.resource + "/" + v.ns + "/" + v.name
		}
		h.Log.Info("deleted", "object", id)
		deleted = append(deleted, id)
	}
	if err := errors.Join(errs...); err != nil {
		return deleted, fmt.Errorf("revoke service account %s/%s: %w", a.Namespace, a.ServiceAccount, err)
	}
	return deleted, nil
}

// revokeVictim is one object Revoke deletes.
type revokeVictim struct {
	resource, ns, name string
	uid                types.UID
	del                func() error
}

// revokeVictims gets the five objects of a by name and keeps those that
// are this tool's for a; the others are returned as errors.
func (h *Harvester) revokeVictims(ctx context.Context, a Access) ([]revokeVictim, []error) {
	ns := a.Namespace
	var victims []revokeVictim
	var errs []error
	consider := func(kind, resource, objNS, name string, obj metav1.Object, refersToSA bool, err error, del func(types.UID) error) {
		switch {
		case apierrors.IsNotFound(err):
			return
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s %s: %w", kind, name, err))
		case !IsOwned(obj.GetLabels(), a.ClusterName) || !refersToSA:
			errs = append(errs, fmt.Errorf("%s %s exists but was not created by harvester-bootstrap for service account %s/%s of cluster %q; left untouched",
				kind, name, ns, a.ServiceAccount, a.ClusterName))
		default:
			uid := obj.GetUID()
			victims = append(victims, revokeVictim{resource, objNS, name, uid, func() error { return del(uid) }})
		}
	}
	precondition := func(uid types.UID) metav1.DeleteOptions {
		return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	}
	crb, err := h.Client.ClusterRoleBindings().Get(ctx, a.ClusterRoleBindingName(), metav1.GetOptions{})
	consider("ClusterRoleBinding", "clusterrolebindings", "", a.ClusterRoleBindingName(), crb, err == nil && bindsOnly(crb.Subjects, a), err, func(uid types.UID) error {
		return h.Client.ClusterRoleBindings().Delete(ctx, a.ClusterRoleBindingName(), precondition(uid))
	})
	for _, name := range []string{a.RoleBindingName(), a.CSIRoleBindingName()} {
		rb, err := h.Client.RoleBindings(ns).Get(ctx, name, metav1.GetOptions{})
		consider("RoleBinding", "rolebindings", ns, name, rb, err == nil && bindsOnly(rb.Subjects, a), err, func(uid types.UID) error {
			return h.Client.RoleBindings(ns).Delete(ctx, name, precondition(uid))
		})
	}
	sec, err := h.Client.Secrets(ns).Get(ctx, a.TokenSecretName(), metav1.GetOptions{})
	consider("Secret", "secrets", ns, a.TokenSecretName(), sec, err == nil && sec.Annotations[corev1.ServiceAccountNameKey] == a.ServiceAccount, err, func(uid types.UID) error {
		return h.Client.Secrets(ns).Delete(ctx, a.TokenSecretName(), precondition(uid))
	})
	sa, err := h.Client.ServiceAccounts(ns).Get(ctx, a.ServiceAccount, metav1.GetOptions{})
	consider("ServiceAccount", "serviceaccounts", ns, a.ServiceAccount, sa, true, err, func(uid types.UID) error {
		return h.Client.ServiceAccounts(ns).Delete(ctx, a.ServiceAccount, precondition(uid))
	})
	return victims, errs
}

// bindsOnly reports whether subjects are exactly a's service account.
func bindsOnly(subjects []rbacv1.Subject, a Access) bool {
	return len(subjects) == 1 && subjects[0].Kind == rbacv1.ServiceAccountKind &&
		subjects[0].Name == a.ServiceAccount && subjects[0].Namespace == a.Namespace
}

// Server returns the API server URL from the admin config.
func (h *Harvester) Server() string { return h.Config.Host }

// CAData returns the CA bundle the guest should trust: the Secret's
// ca.crt, else the admin kubeconfig's CA.
func (h *Harvester) CAData(secret *corev1.Secret) ([]byte, error) {
	if ca := secret.Data[corev1.ServiceAccountRootCAKey]; len(ca) > 0 {
		return ca, nil
	}
	if len(h.Config.CAData) > 0 {
		return h.Config.CAData, nil
	}
	if h.Config.CAFile != "" {
		if err := rest.LoadTLSFiles(h.Config); err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		return h.Config.CAData, nil
	}
	return nil, nil
}

// MigrateNamespace moves every guest credential of VM namespace ns that this
// tool (or the node driver) made with the cluster-wide binding of
// harvesterhci.io:csi-driver to the RoleBinding in ns, then deletes the
// ClusterRoleBinding. Only bindings carrying this tool's labels, with the
// name it derives and one ServiceAccount of ns as their subject, are
// touched. It returns the service accounts it migrated.
func (h *Harvester) MigrateNamespace(ctx context.Context, ns string) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: addons.LabelManagedBy + "=" + addons.ManagedBy + "," + LabelCluster}
	crbs, err := h.Client.ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list ClusterRoleBindings %s: %w", sel.LabelSelector, err)
	}
	var migrated []string
	for _, crb := range crbs.Items {
		if len(crb.Subjects) != 1 || crb.Subjects[0].Kind != rbacv1.ServiceAccountKind || crb.Subjects[0].Namespace != ns ||
			crb.RoleRef.Name != harvester.CSIDriverRole {
			continue
		}
		a := Access{ClusterName: crb.Labels[LabelCluster], Namespace: ns, ServiceAccount: crb.Subjects[0].Name}
		if crb.Name != a.ClusterRoleBindingName() || a.Validate() != nil {
			continue
		}
		if err := h.apply(ctx, BuildAccess(a).CSIRoleBinding); err != nil {
			return migrated, fmt.Errorf("migrate %s/%s: %w", ns, a.ServiceAccount, err)
		}
		if _, err := h.DropClusterWide(ctx, a); err != nil {
			return migrated, fmt.Errorf("migrate %s/%s: %w", ns, a.ServiceAccount, err)
		}
		migrated = append(migrated, a.ServiceAccount)
	}
	return migrated, nil
}

// ErrGrantUnseen: the credential may not read ClusterRoleBindings, so it
// cannot tell whether the namespace has its grant (the node driver's own
// credential, which holds no right on them, never can).
var ErrGrantUnseen = errors.New("cannot see the namespace's grant")

// EnsureGrantWhenMissing makes namespace ns's grant only when its
// ClusterRoleBinding is missing: one request when it exists. With a
// credential that may not read ClusterRoleBindings it returns
// ErrGrantUnseen and changes nothing. It reports whether it made the grant.
func (h *Harvester) EnsureGrantWhenMissing(ctx context.Context, ns string) (bool, error) {
	name := GrantBindingName(ns)
	crb, err := h.Client.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && IsGrantObject(crb.Labels):
		return false, nil
	case apierrors.IsForbidden(err):
		return false, fmt.Errorf("%w %s: %w", ErrGrantUnseen, name, err)
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("get ClusterRoleBinding %s: %w", name, err)
	}
	return true, h.EnsureGrant(ctx, ns)
}

// DropGrantIfUnused deletes namespace ns's grant once nothing of this tool
// is bound in ns any more (no RoleBinding of a guest credential or of a
// driver credential carries its label there), and the grant's shared roles
// once no namespace has a grant: what a guest cluster's credential needed
// leaves with the last of them. It returns what it deleted.
func (h *Harvester) DropGrantIfUnused(ctx context.Context, ns string) ([]string, error) {
	managed := metav1.ListOptions{LabelSelector: addons.LabelManagedBy + "=" + addons.ManagedBy}
	rbs, err := h.Client.RoleBindings(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("list RoleBindings in %s: %w", ns, err)
	}
	if len(rbs.Items) > 0 {
		return nil, nil
	}
	g := BuildGrant(ns)
	victims := []runtime.Object{g.ReadsBinding}
	for _, b := range g.SharedGrants {
		victims = append(victims, b)
	}
	others, err := h.Client.ClusterRoleBindings().List(ctx, metav1.ListOptions{LabelSelector: LabelGuestNamespace + "," + LabelGuestNamespace + "!=" + ns})
	if err != nil {
		return nil, fmt.Errorf("list the grants of other namespaces: %w", err)
	}
	if len(others.Items) == 0 {
		victims = append(victims, g.ReadsRole)
		for _, r := range g.SharedRoles {
			victims = append(victims, r)
		}
	}
	var deleted []string
	for _, obj := range victims {
		m := obj.(metav1.Object)
		current, err := h.get(ctx, obj, m.GetNamespace(), m.GetName())
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return deleted, fmt.Errorf("get %s %s: %w", kindOf(obj), qualified(m), err)
		case !IsGrantObject(current.GetLabels()):
			continue // not this tool's: left alone
		}
		if err := h.deleteGrantObject(ctx, obj, current.GetUID()); err != nil {
			return deleted, err
		}
		deleted = append(deleted, kindOf(obj)+" "+qualified(m))
		h.Log.Info("deleted", "object", kindOf(obj)+" "+qualified(m))
	}
	return deleted, nil
}

// deleteGrantObject deletes one object of a grant by UID and waits until
// it is gone.
func (h *Harvester) deleteGrantObject(ctx context.Context, obj runtime.Object, uid types.UID) error {
	m := obj.(metav1.Object)
	ns, name := m.GetNamespace(), m.GetName()
	o := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	var resource string
	var del func() error
	switch obj.(type) {
	case *rbacv1.ClusterRoleBinding:
		resource, del = "clusterrolebindings", func() error { return h.Client.ClusterRoleBindings().Delete(ctx, name, o) }
	case *rbacv1.RoleBinding:
		resource, del = "rolebindings", func() error { return h.Client.RoleBindings(ns).Delete(ctx, name, o) }
	case *rbacv1.ClusterRole:
		resource, del = "clusterroles", func() error { return h.Client.ClusterRoles().Delete(ctx, name, o) }
	case *rbacv1.Role:
		resource, del = "roles", func() error { return h.Client.Roles(ns).Delete(ctx, name, o) }
	default:
		return fmt.Errorf("delete %T: not a kind of the grant", obj)
	}
	return h.deleteAndWait(ctx, resource, ns, name, uid, del)
}
