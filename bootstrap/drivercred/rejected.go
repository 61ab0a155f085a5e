package drivercred

import (
	"context"
	"fmt"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
