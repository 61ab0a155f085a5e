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

func applyBody(obj runtime.Object) ([]byte, error) {
	return json.Marshal(obj)
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
// ServiceAccount, RoleBinding, ClusterRoleBinding and token Secret.
// Every name is validated first: an invalid one makes no API call.
func (h *Harvester) EnsureAccess(ctx context.Context, a Access) error {
	if err := a.Validate(); err != nil {
		return err
	}
	objs := BuildAccess(a)
	opts := metav1.PatchOptions{FieldManager: addons.FieldManager, Force: ptr.To(true)}
	ns := a.Namespace

	sa, err := h.Client.ServiceAccounts(ns).Get(ctx, a.ServiceAccount, metav1.GetOptions{})
	if err := checkOwned("ServiceAccount", ns+"/"+a.ServiceAccount, sa.GetLabels(), a.ClusterName, err); err != nil {
		return err
	}
	rb, err := h.Client.RoleBindings(ns).Get(ctx, a.RoleBindingName(), metav1.GetOptions{})
	if err := checkOwned("RoleBinding", ns+"/"+a.RoleBindingName(), rb.GetLabels(), a.ClusterName, err); err != nil {
		return err
	}
	crb, err := h.Client.ClusterRoleBindings().Get(ctx, a.ClusterRoleBindingName(), metav1.GetOptions{})
	if err := checkOwned("ClusterRoleBinding", a.ClusterRoleBindingName(), crb.GetLabels(), a.ClusterName, err); err != nil {
		return err
	}
	sec, err := h.Client.Secrets(ns).Get(ctx, a.TokenSecretName(), metav1.GetOptions{})
	if err := checkOwned("Secret", ns+"/"+a.TokenSecretName(), sec.GetLabels(), a.ClusterName, err); err != nil {
		return err
	}

	steps := []struct {
		what string
		obj  runtime.Object
		do   func([]byte) error
	}{
		{"ServiceAccount " + a.ServiceAccount, objs.ServiceAccount, func(b []byte) error {
			_, err := h.Client.ServiceAccounts(ns).Patch(ctx, a.ServiceAccount, types.ApplyPatchType, b, opts)
			return err
		}},
		{"RoleBinding " + a.RoleBindingName(), objs.RoleBinding, func(b []byte) error {
			_, err := h.Client.RoleBindings(ns).Patch(ctx, a.RoleBindingName(), types.ApplyPatchType, b, opts)
			return err
		}},
		{"ClusterRoleBinding " + a.ClusterRoleBindingName(), objs.ClusterRoleBinding, func(b []byte) error {
			_, err := h.Client.ClusterRoleBindings().Patch(ctx, a.ClusterRoleBindingName(), types.ApplyPatchType, b, opts)
			return err
		}},
		{"Secret " + a.TokenSecretName(), objs.TokenSecret, func(b []byte) error {
			_, err := h.Client.Secrets(ns).Patch(ctx, a.TokenSecretName(), types.ApplyPatchType, b, opts)
			return err
		}},
	}
	for _, s := range steps {
		b, err := applyBody(s.obj)
		if err != nil {
			return fmt.Errorf("apply %s: %w", s.what, err)
		}
		if err := s.do(b); err != nil {
			return fmt.Errorf("apply %s in %s: %w", s.what, ns, err)
		}
		h.Log.Info("applied", "object", s.what, "namespace", ns)
	}
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
// a.ServiceAccount of the cluster: its ServiceAccount, RoleBinding,
// ClusterRoleBinding and token Secret, each only if it carries this tool's
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

// revokeVictims gets the four objects of a by name and keeps those that
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
	rb, err := h.Client.RoleBindings(ns).Get(ctx, a.RoleBindingName(), metav1.GetOptions{})
	consider("RoleBinding", "rolebindings", ns, a.RoleBindingName(), rb, err == nil && bindsOnly(rb.Subjects, a), err, func(uid types.UID) error {
		return h.Client.RoleBindings(ns).Delete(ctx, a.RoleBindingName(), precondition(uid))
	})
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
