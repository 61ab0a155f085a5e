// Stand-in for the kubelet, Kubernetes v1.34.4: the kubelet's HTTPS server:
// /stats/summary and /configz. It follows
// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/server/server.go.

package controllers

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's HTTPS server, as far as Harvester reads it: its upgrade
// validator (pkg/webhook/resources/upgrade/validator.go checkDiskSpace)
// GETs https://<rke2.io/internal-ip>:<kubelet port>/stats/summary and
// /configz of every host with its ServiceAccount's token and verifies the
// certificate against the cluster's CA.
const (
	// KubeletPort is the kubelet's --port (10250), which it reports in
	// status.daemonEndpoints.kubeletEndpoint.
	KubeletPort = 10250
	// AnnInternalIP is the host address RKE2 annotates its Node with.
	AnnInternalIP = "rke2.io/internal-ip"
	// hostFSUsed is what a host's kubelet filesystem holds: Harvester
	// v1.8's images take about 30 GiB on a host (the simulator's reading).
	hostFSUsed = 30 << 30
	// imageGCHigh is the kubelet's imageGCHighThresholdPercent default.
	imageGCHigh = 85
)

// KubeletCert issues host's kubelet serving certificate for its address
// ip, signed by the cluster's CA (PEM certificate and key).
type KubeletCert func(host, ip string) (certPEM, keyPEM []byte, err error)

// serveKubelet starts host's kubelet server on addr:KubeletPort (the
// host's address: its virt-handler server's), then gives the Node the
// address (rke2.io/internal-ip) and the port, as RKE2 and the kubelet do.
// No server without Options.KubeletCert.
func (s *sim) serveKubelet(ctx context.Context, host, addr string) error {
	if s.opts.KubeletCert == nil {
		return nil
	}
	certPEM, keyPEM, err := s.opts.KubeletCert(host, addr)
	if err != nil {
		return fmt.Errorf("kubelet: certificate of node %s: %w", host, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("kubelet: certificate of node %s: %w", host, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(KubeletPort)))
	if err != nil {
		return fmt.Errorf("kubelet: server of node %s: %w", host, err)
	}
	base := context.WithoutCancel(ctx)
	srv := &http.Server{Handler: s.kubeletMux(host), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:   &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		BaseContext: func(net.Listener) context.Context { return base }}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("kubelet: server stopped", "node", host, "err", err)
		}
	}()
	go func() {
		<-s.handlerREST.done
		_ = srv.Close()
	}()
	return s.advertiseKubelet(ctx, host, addr)
}

// advertiseKubelet writes the host's address annotation and kubelet port.
func (s *sim) advertiseKubelet(ctx context.Context, host, addr string) error {
	meta, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnInternalIP: addr}}})
	if _, err := s.kube.CoreV1().Nodes().Patch(ctx, host, types.MergePatchType, meta, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("kubelet: annotate node %s: %w", host, err)
	}
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"daemonEndpoints": corev1.NodeDaemonEndpoints{
		KubeletEndpoint: corev1.DaemonEndpoint{Port: KubeletPort}}}})
	if _, err := s.kube.CoreV1().Nodes().Patch(ctx, host, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("kubelet: port of node %s: %w", host, err)
	}
	return nil
}

// kubeletMux answers /stats/summary (the node's filesystem) and /configz
// (the kubelet's configuration, image garbage collection thresholds), each
// after the kubelet's webhook authentication and authorization
// (TokenReview, then SubjectAccessReview of nodes/stats or nodes/proxy).
func (s *sim) kubeletMux(host string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats/summary", s.kubeletAuth(host, "stats", func(w http.ResponseWriter, r *http.Request) {
		node, err := s.kube.CoreV1().Nodes().Get(r.Context(), host, metav1.GetOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		capacity := node.Status.Capacity.StorageEphemeral().Value()
		used := min(int64(hostFSUsed), capacity)
		avail := uint64(capacity - used)
		fs := map[string]any{"time": metav1.Now(), "capacityBytes": uint64(capacity), "usedBytes": uint64(used), "availableBytes": avail}
		writeJSON(w, map[string]any{"node": map[string]any{"nodeName": host, "fs": fs}, "pods": []any{}})
	}))
	mux.HandleFunc("GET /configz", s.kubeletAuth(host, "proxy", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"kubeletconfig": map[string]any{
			"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1",
			"imageGCHighThresholdPercent": imageGCHigh, "imageGCLowThresholdPercent": 80,
		}})
	}))
	return mux
}

// kubeletAuth is the kubelet's --authentication-token-webhook and
// --authorization-mode=Webhook for nodes/<subresource> of host.
func (s *sim) kubeletAuth(host, subresource string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		tr, err := s.kube.AuthenticationV1().TokenReviews().Create(r.Context(),
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil || !tr.Status.Authenticated {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		u := tr.Status.User
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range u.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		sar, err := s.kube.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: subresource, Name: host}},
		}, metav1.CreateOptions{})
		if err != nil || !sar.Status.Allowed {
			msg := fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[%s])", u.Username, subresource)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
