// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's client, as its
// ServiceAccount. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/cmd/virt-handler/virt-handler.go.

package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// KubeVirt's virt-handler identity. KubeVirt's VMI mutator
// (pkg/virt-api/webhooks/mutating-webhook/mutators/vmi-mutator.go) puts
// back the old status of a VMI updated by anyone but KubeVirt's own
// ServiceAccounts, so the simulated virt-handler writes with a token of
// harvester-system/kubevirt-handler, which KubeVirt's install (virt-operator's
// objects) creates with its RBAC. One token serves every host: KubeVirt's
// kubevirt-node-restriction ValidatingAdmissionPolicy, which would bind
// each handler to its own Node, is not installed.
const (
	HandlerNamespace      = "harvester-system"
	HandlerServiceAccount = "kubevirt-handler"
	handlerTokenTTL       = 48 * time.Hour
)

// handlerClients holds the client as virt-handler, made on first use.
type handlerClients struct {
	mu  sync.Mutex
	cfg *rest.Config
	dyn dynamic.Interface
	at  time.Time
}

// handlerClient returns a dynamic client authenticated as KubeVirt's
// virt-handler, asking for a token of its ServiceAccount when it has none
// (or an old one).
func (s *sim) handlerClient(ctx context.Context) (dynamic.Interface, error) {
	h := &s.handler
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dyn != nil && time.Since(h.at) < handlerTokenTTL/2 {
		return h.dyn, nil
	}
	ttl := int64(handlerTokenTTL / time.Second)
	tr, err := s.kube.CoreV1().ServiceAccounts(HandlerNamespace).CreateToken(ctx, HandlerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		if s.state.once("virt-handler", "token", err.Error()) {
			s.log.Warn("virt-handler: no token of KubeVirt's handler ServiceAccount yet", "err", err)
		}
		return nil, fmt.Errorf("virt-handler: token of %s/%s: %w", HandlerNamespace, HandlerServiceAccount, err)
	}
	cfg := rest.AnonymousClientConfig(h.cfg)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("virt-handler: client: %w", err)
	}
	h.dyn, h.at = dyn, time.Now()
	return dyn, nil
}
