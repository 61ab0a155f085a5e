package credentials

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kubeconfig waits for the token of a's Secret and renders the kubeconfig a
// guest uses: server (default: the admin config's), the Secret's CA, and the
// Secret's token or, with ttl > 0, a time-bound token bound to the Secret.
// `kubeconfig` and the node driver both issue credentials through it.
func (h *Harvester) Kubeconfig(ctx context.Context, a Access, server string, ttl time.Duration) ([]byte, error) {
	secret, err := h.TokenSecret(ctx, a)
	if err != nil {
		return nil, err
	}
	token := string(secret.Data[corev1.ServiceAccountTokenKey])
	if ttl > 0 {
		if token, err = h.RequestToken(ctx, a, secret, ttl); err != nil {
			return nil, err
		}
	}
	ca, err := h.CAData(secret)
	if err != nil {
		return nil, err
	}
	if server == "" {
		server = h.Server()
	}
	return BuildKubeconfig(Credentials{Server: server, CAData: ca, Token: token, Namespace: a.Namespace, Cluster: a.ClusterName})
}
