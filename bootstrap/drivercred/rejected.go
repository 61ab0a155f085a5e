package drivercred

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// rejectPoll is how often revoke and rotate ask whether the old token is
// still accepted: kube-apiserver keeps a token it accepted in a cache for
// about 10 s, and no object shows that cache, so asking is the only way.
const rejectPoll = time.Second

// tokenOf is the token of the credential's Secret ("" when none).
func (h *Harvester) tokenOf(ctx context.Context, s Spec) string {
	sec, err := h.Kube.CoreV1().Secrets(s.Namespace).Get(ctx, s.TokenSecretName(), metav1.GetOptions{})
	if err != nil || !s.Owns(sec.Labels) {
		return ""
	}
	return string(sec.Data[corev1.ServiceAccountTokenKey])
}

// waitRejected returns once the API server answers 401 to token, so a
// revoke that returns has taken effect.
func (h *Harvester) waitRejected(ctx context.Context, token string) error {
	if token == "" || h.Config == nil {
		return nil
	}
	cfg := rest.AnonymousClientConfig(h.Config)
	cfg.BearerToken = token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client of the revoked token: %w", err)
	}
	h.Log.Info("waiting until the API server rejects the revoked token (it keeps accepted tokens for up to 10 s)")
	err = wait.PollUntilContextCancel(ctx, rejectPoll, true, func(ctx context.Context) (bool, error) {
		_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return kubeapi.IsUnauthorized(err), nil
	})
	if err != nil {
		return fmt.Errorf("the revoked token is still accepted: %w", err)
	}
	return nil
}

var errCannotImpersonate = errors.New("may not impersonate")

// waitPolicyInEffect returns once the credential's admission policy
// refuses, in every machine namespace, what it must: kube-apiserver loads
// a new policy and binding from its informers a moment after they are
// stored, and no object shows when. It asks as the driver (impersonated,
// a dry run): a token Secret for the namespace's "default" ServiceAccount
// must be refused by the policy.
func (h *Harvester) waitPolicyInEffect(ctx context.Context, s Spec) error {
	return h.waitRefused(ctx, s, s.Identity().PolicyName(), func(ctx context.Context, cs kubernetes.Interface, ns string) error {
		probe := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "harvester-bootstrap-policy-probe", Namespace: ns, Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type:       corev1.SecretTypeServiceAccountToken,
		}
		_, err := cs.CoreV1().Secrets(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

// WaitGrantPolicyInEffect returns once the credential's grant policy
// refuses, for the grant of every machine namespace, what it must: as the
// driver (a dry run), naming the group system:authenticated in the grant's
// ClusterRoleBinding. Run it once the grants exist; nothing without
// CloudProvider.
func (h *Harvester) WaitGrantPolicyInEffect(ctx context.Context, s Spec) error {
	if !s.CloudProvider {
		return nil
	}
	everyone, _ := json.Marshal(map[string]any{"subjects": []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}})
	return h.waitRefused(ctx, s, s.Identity().GrantPolicyName(), func(ctx context.Context, cs kubernetes.Interface, ns string) error {
		_, err := cs.RbacV1().ClusterRoleBindings().Patch(ctx, credentials.GrantBindingName(ns), types.MergePatchType, everyone, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

// waitRefused polls try, as the driver (impersonated), in every machine
// namespace until admission policy name refuses it.
func (h *Harvester) waitRefused(ctx context.Context, s Spec, name string, try func(context.Context, kubernetes.Interface, string) error) error {
	if h.Config == nil {
		return nil
	}
	cfg := rest.CopyConfig(h.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: s.Identity().Username()}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client as the driver: %w", err)
	}
	for _, ns := range s.MachineNamespaces {
		var last error
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			last = try(ctx, cs, ns)
			if apierrors.IsForbidden(last) && strings.Contains(last.Error(), "impersonate") {
				return false, errCannotImpersonate
			}
			return apierrors.IsForbidden(last) && strings.Contains(last.Error(), name), nil
		})
		if errors.Is(err, errCannotImpersonate) {
			h.Log.Warn("cannot ask as the driver whether its admission policy is in effect (--kubeconfig may not impersonate); kube-apiserver loads it within seconds", "policy", name)
			return nil
		}
		if err != nil {
			if last == nil {
				last = errors.New("the dry run was allowed")
			}
			return fmt.Errorf("wait for admission policy %s to take effect in %s (last answer: %w): %w", name, ns, last, err)
		}
	}
	h.Log.Info("admission policy in effect", "policy", name, "namespaces", s.MachineNamespaces)
	return nil
}
