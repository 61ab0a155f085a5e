package sim_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeletServerAuthenticatesAndAuthorizes attacks a host's kubelet
// server (what Harvester's upgrade validator reads: the address of the
// host's rke2.io/internal-ip annotation, the port of its
// status.daemonEndpoints, a certificate the cluster's CA signed for that
// address) as the kubelet's webhook authentication and authorization
// answer: no token 401 Unauthorized, a token kube-apiserver does not
// know 401, a ServiceAccount without nodes/proxy 403 naming what it
// lacked; Harvester's ServiceAccount (cluster-admin, the webhook's) gets
// the configuration, image garbage collection at the kubelet's default 85 %.
func TestKubeletServerAuthenticatesAndAuthorizes(t *testing.T) {
	ctx := testContext(t)
	node, err := kube.CoreV1().Nodes().Get(ctx, "harvester-node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, port := node.Annotations["rke2.io/internal-ip"], node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if ip == "" || port != 10250 {
		t.Fatalf("host %s: rke2.io/internal-ip %q, kubelet port %d; want an address and 10250", node.Name, ip, port)
	}
	cfg, err := simulator.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		t.Fatal("no CA in the simulator's kubeconfig")
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	get := func(token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s:%d/configz", ip, port), nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET /configz (verified against the cluster's CA): %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	token := func(ns, sa string) string {
		t.Helper()
		if _, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{}); err != nil {
			if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kube.CoreV1().ServiceAccounts(ns).Delete(ctx, sa, metav1.DeleteOptions{}) })
		}
		tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Status.Token
	}
	if code, body := get(""); code != http.StatusUnauthorized || body != "Unauthorized" {
		t.Errorf("no token: %d %q, want 401 Unauthorized", code, body)
	}
	if code, body := get("not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("unknown token: %d %q, want 401", code, body)
	}
	want := "Forbidden (user=system:serviceaccount:default:kubelet-attack, verb=get, resource=nodes, subresource(s)=[proxy])"
	if code, body := get(token("default", "kubelet-attack")); code != http.StatusForbidden || body != want {
		t.Errorf("ServiceAccount without rights: %d %q, want 403 %q", code, body, want)
	}
	if code, body := get(token("harvester-system", "harvester")); code != http.StatusOK || !strings.Contains(body, `"imageGCHighThresholdPercent":85`) {
		t.Errorf("Harvester's ServiceAccount: %d %q, want 200 and imageGCHighThresholdPercent 85", code, body)
	}
}
