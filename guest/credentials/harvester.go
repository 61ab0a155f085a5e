package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
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
		o, err := h.objectFor(obj)
		if err != nil {
			return err
		}
		current, err := o.Get(ctx)
		var labels map[string]string
		if err == nil {
			labels = current.GetLabels()
		}
		if err := checkOwned(o.Kind, o.Qualified(), labels, a.ClusterName, err); err != nil {
			return err
		}
	}
	var uid types.UID
	for _, obj := range objs {
		apply := h.apply
		if sec, ok := obj.(*corev1.Secret); ok {
			obj, apply = BoundTo(sec, uid), h.applyToken
		}
		applied, err := apply(ctx, obj)
		if err != nil {
			return err
		}
		if _, ok := obj.(*corev1.ServiceAccount); ok {
			uid = applied.GetUID()
		}
	}
	return nil
}

// paramCacheBackoff bounds how long applyToken waits (about 5 s) for
// kube-apiserver's admission-policy parameters, a watch-fed cache with no
// object to watch, to hold a ServiceAccount re-created under the same name.
var paramCacheBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 7, Cap: 2 * time.Second}

// applyToken applies the token Secret; while a driver credential's policy
// refuses it because its parameters still hold an earlier ServiceAccount
// of the name (another UID: rotate, or a revoke just before), it asks again.
func (h *Harvester) applyToken(ctx context.Context, obj runtime.Object) (metav1.Object, error) {
	var applied metav1.Object
	err := retry.OnError(paramCacheBackoff, func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), refusedOtherUID)
	}, func() error {
		var err error
		applied, err = h.apply(ctx, obj)
		return err
	})
	return applied, err
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
	o, _ := h.objectOf("ClusterRoleBinding", "", name)
	if err := o.DeleteAndWait(ctx, crb.UID); err != nil {
		return false, err
	}
	h.Log.Info("deleted the cluster-wide binding of "+harvester.CSIDriverRole+"; the RoleBinding in the VM namespace replaces it", "clusterRoleBinding", name)
	return true, nil
}

// EnsureGrant creates or updates, idempotently, the grant of VM namespace
// ns (grant.go); an object of one of its names that this tool did not
// create is refused before any change. Its bindings name the guest
// ServiceAccounts present in ns (GrantSubjects): this makes a new grant,
// adds a new credential's and rewrites the group subject of a grant made
// before. With o.NoRWX it deletes the namespace's bindings the full grant
// has and this one leaves out.
func (h *Harvester) EnsureGrant(ctx context.Context, ns string, o GrantOptions) error {
	subjects, err := h.grantSubjects(ctx, ns)
	if err != nil {
		return fmt.Errorf("grant namespace %s: %w", ns, err)
	}
	objs := BuildGrant(ns, o, subjects).List()
	var errs []error
	for _, obj := range objs {
		o, err := h.objectFor(obj)
		if err != nil {
			return err
		}
		current, err := o.Get(ctx)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s: %w", o, err))
		case !IsGrantObject(current.GetLabels()):
			errs = append(errs, fmt.Errorf("%s exists and is not managed by harvester-bootstrap; refusing to change it", o))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("grant namespace %s: %w", ns, err)
	}
	for _, obj := range objs {
		if _, err := h.apply(ctx, obj); err != nil {
			return fmt.Errorf("grant namespace %s: %w", ns, err)
		}
	}
	if !o.NoRWX {
		return nil
	}
	for _, b := range BuildGrant(ns, GrantOptions{}, nil).SharedGrants {
		if !rwxOnly(b.Namespace) {
			continue
		}
		x, _ := h.objectOf("RoleBinding", b.Namespace, b.Name)
		current, err := x.Get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("grant namespace %s: get %s: %w", ns, x, err)
		case !IsGrantObject(current.GetLabels()):
			continue // not this tool's: left alone
		}
		if err := x.DeleteAndWait(ctx, current.GetUID()); err != nil {
			return fmt.Errorf("grant namespace %s without RWX: %w", ns, err)
		}
		h.Log.Info("deleted (--no-rwx)", "object", x.String())
	}
	return nil
}

func kindOf(obj runtime.Object) string { return obj.GetObjectKind().GroupVersionKind().Kind }

// apply server-side applies obj and returns the object as stored.
func (h *Harvester) apply(ctx context.Context, obj runtime.Object) (metav1.Object, error) {
	o, err := h.objectFor(obj)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(obj)
	var applied metav1.Object
	if err == nil {
		applied, err = o.Patch(ctx, types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: addons.FieldManager, Force: ptr.To(true)})
	}
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", o, err)
	}
	h.Log.Info("applied", "object", o.String())
	return applied, nil
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
	secret, _ := h.objectOf("Secret", a.Namespace, name)
	if err := secret.DeleteAndWait(ctx, sec.UID); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	account, _ := h.objectOf("ServiceAccount", a.Namespace, a.ServiceAccount)
	if err := account.DeleteAndWait(ctx, sa.UID); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	h.Log.Info("deleted old service account and token secret", "namespace", a.Namespace, "serviceAccount", a.ServiceAccount)
	return h.EnsureAccess(ctx, a)
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
		if err := v.DeleteAndWait(ctx, v.uid); err != nil {
			errs = append(errs, err)
			continue
		}
		h.Log.Info("deleted", "object", v.Ref())
		deleted = append(deleted, v.Ref())
	}
	if err := errors.Join(errs...); err != nil {
		return deleted, fmt.Errorf("revoke service account %s/%s: %w", a.Namespace, a.ServiceAccount, err)
	}
	return deleted, nil
}

// revokeVictim is one object Revoke deletes, of that UID.
type revokeVictim struct {
	restapi.Named
	uid types.UID
}

// revokeVictims gets the five objects of a by name and keeps those that
// are this tool's for a; the others are returned as errors.
func (h *Harvester) revokeVictims(ctx context.Context, a Access) ([]revokeVictim, []error) {
	ns := a.Namespace
	var victims []revokeVictim
	var errs []error
	// refersToSA: a binding binds a's service account alone; a Secret is its token.
	refersToSA := func(cur metav1.Object) bool {
		switch x := cur.(type) {
		case *rbacv1.RoleBinding:
			return bindsOnly(x.Subjects, a)
		case *rbacv1.ClusterRoleBinding:
			return bindsOnly(x.Subjects, a)
		case *corev1.Secret:
			return x.Annotations[corev1.ServiceAccountNameKey] == a.ServiceAccount
		}
		return true
	}
	for _, want := range []struct{ kind, ns, name string }{
		{"ClusterRoleBinding", "", a.ClusterRoleBindingName()},
		{"RoleBinding", ns, a.RoleBindingName()},
		{"RoleBinding", ns, a.CSIRoleBindingName()},
		{"Secret", ns, a.TokenSecretName()},
		{"ServiceAccount", ns, a.ServiceAccount},
	} {
		o, _ := h.objectOf(want.kind, want.ns, want.name)
		cur, err := o.Get(ctx)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s %s: %w", o.Kind, o.Name, err))
		case !IsOwned(cur.GetLabels(), a.ClusterName) || !refersToSA(cur):
			errs = append(errs, fmt.Errorf("%s %s exists but was not created by harvester-bootstrap for service account %s/%s of cluster %q; left untouched",
				o.Kind, o.Name, ns, a.ServiceAccount, a.ClusterName))
		default:
			victims = append(victims, revokeVictim{o, cur.GetUID()})
		}
	}
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
		if _, err := h.apply(ctx, BuildAccess(a).CSIRoleBinding); err != nil {
			return migrated, fmt.Errorf("migrate %s/%s: %w", ns, a.ServiceAccount, err)
		}
		if _, err := h.DropClusterWide(ctx, a); err != nil {
			return migrated, fmt.Errorf("migrate %s/%s: %w", ns, a.ServiceAccount, err)
		}
		migrated = append(migrated, a.ServiceAccount)
	}
	return migrated, nil
}

// ErrGrantUnseen: the credential may not read the grant's ClusterRoleBinding
// (a node driver credential made before it could add to the grant).
var ErrGrantUnseen = errors.New("cannot see the namespace's grant")

// DropGrantIfUnused deletes namespace ns's grant once nothing of this tool
// is bound in ns any more (no RoleBinding of a guest credential or of a
// driver credential carries its label there), and the grant's shared roles
// once no namespace has a grant: what a guest cluster's credential needed
// leaves with the last of them. While it stays, its bindings name exactly
// the guest ServiceAccounts left in ns (a revoked one leaves them). It
// returns what it deleted.
func (h *Harvester) DropGrantIfUnused(ctx context.Context, ns string) ([]string, error) {
	managed := metav1.ListOptions{LabelSelector: addons.LabelManagedBy + "=" + addons.ManagedBy}
	rbs, err := h.Client.RoleBindings(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("list RoleBindings in %s: %w", ns, err)
	}
	if len(rbs.Items) > 0 {
		subjects, err := h.grantSubjects(ctx, ns)
		if err == nil {
			err = h.setGrantSubjects(ctx, ns, func([]rbacv1.Subject) []rbacv1.Subject { return subjects })
		}
		if err != nil {
			return nil, fmt.Errorf("grant of namespace %s: %w", ns, err)
		}
		return nil, nil
	}
	g := BuildGrant(ns, GrantOptions{}, nil)
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
		o, err := h.objectFor(obj)
		if err != nil {
			return deleted, err
		}
		current, err := o.Get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return deleted, fmt.Errorf("get %s: %w", o, err)
		case !IsGrantObject(current.GetLabels()):
			continue // not this tool's: left alone
		}
		if err := o.DeleteAndWait(ctx, current.GetUID()); err != nil {
			return deleted, err
		}
		deleted = append(deleted, o.String())
		h.Log.Info("deleted", "object", o.String())
	}
	return deleted, nil
}
