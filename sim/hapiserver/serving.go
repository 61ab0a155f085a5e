package hapiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Where the API server keeps the CA of its HTTPS listener:
// rancher/dynamiclistener's defaults (server.ListenAndServe: CAName
// "serving-ca", CANamespace "kube-system"), which Harvester's
// pkg/server/types.go leaves as they are.
const (
	ServingCANamespace = "kube-system"
	ServingCASecret    = "serving-ca"
)

// ServingCA is the API server's serving CA as a pool (its Secret is made
// when its HTTPS listener starts, after its controllers; WaitServing
// waits for it).
func ServingCA(ctx context.Context, kube kubernetes.Interface) (*x509.CertPool, error) {
	sec, err := kube.CoreV1().Secrets(ServingCANamespace).Get(ctx, ServingCASecret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("harvester API server: read its serving CA (Secret %s/%s): %w", ServingCANamespace, ServingCASecret, err)
	}
	return caPool(sec)
}

// caPool is the Secret's tls.crt as a pool.
func caPool(sec *corev1.Secret) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[corev1.TLSCertKey]) {
		return nil, fmt.Errorf("harvester API server: Secret %s/%s holds no PEM certificate in %s", ServingCANamespace, ServingCASecret, corev1.TLSCertKey)
	}
	return pool, nil
}

// WaitServing waits until the API server at httpsURL serves Harvester's
// node API: a GET of /v1/harvester/nodes/NODE answers 200 over TLS with a
// certificate its serving CA signed for the URL's host. Its listener
// starts after its controllers, and steve builds its schemas (the node
// actions among them) from discovery after that: until then a node action
// answers 404. dynamiclistener makes the certificate at the first
// connection (and closes it), so this also has it made before anyone
// calls the API.
func WaitServing(ctx context.Context, kube kubernetes.Interface, httpsURL, node string) error {
	secrets := kube.CoreV1().Secrets(ServingCANamespace)
	sk := kubeapi.KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, secrets)
	sec, err := kubeapi.Wait(ctx, sk, ServingCANamespace, ServingCASecret, 0, func(s *corev1.Secret) (bool, error) {
		return s != nil && len(s.Data[corev1.TLSCertKey]) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("harvester API server: wait for its serving CA (Secret %s/%s): %w", ServingCANamespace, ServingCASecret, err)
	}
	pool, err := caPool(sec)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Proxy: nil}}
	defer client.CloseIdleConnections()
	target := httpsURL + "/v1/harvester/nodes/" + url.PathEscape(node)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return fmt.Errorf("harvester API server: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", target, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("harvester API server: wait until it serves its node API: %w (last: %w)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}
