package kubevirt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Component is one of KubeVirt's processes as the simulator starts it:
// Args follow the binary Name under the bin dir; the process runs with
// ServiceAccountDir's files at podenv.ServiceAccountDir (see ExecArgs);
// Ready succeeds once it serves.
type Component struct {
	Name              string
	Args              []string
	ServiceAccountDir string
	Ready             func(ctx context.Context) error
}

func (c *ControlPlane) pki(secret, file string) string {
	return c.path("objects", "pki", secret, file)
}

// Components are virt-api and virt-controller, each with the flags
// virt-operator's Deployment gives it, on loopback ports.
func (c *ControlPlane) Components() ([]Component, error) {
	caPEM, err := os.ReadFile(c.path("objects", "pki", "ca-bundle.crt"))
	if err != nil {
		return nil, fmt.Errorf("kubevirt: %w", err)
	}
	ca := x509.NewCertPool()
	ca.AppendCertsFromPEM(caPEM)
	api := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12}}}
	// virt-controller's certificate names its Service, not the loopback address.
	controller := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // health endpoint on loopback
	return []Component{{
		Name: VirtAPI,
		Args: []string{"--kubeconfig", c.kubeconfigPath(apiServiceAccount),
			"--listen", "127.0.0.1", "--port", strconv.Itoa(c.VirtAPIPort),
			"--tls-cert-file", c.pki("kubevirt-virt-api-certs", "tls.crt"), "--tls-key-file", c.pki("kubevirt-virt-api-certs", "tls.key"),
			"--handler-cert-file", c.pki("kubevirt-virt-handler-certs", "tls.crt"), "--handler-key-file", c.pki("kubevirt-virt-handler-certs", "tls.key")},
		ServiceAccountDir: c.serviceAccountDir(apiServiceAccount),
		Ready: func(ctx context.Context) error {
			_, err := get(ctx, api, "https://"+hostPort(c.VirtAPIPort)+"/healthz")
			return err
		},
	}, {
		Name: VirtController,
		Args: []string{"--kubeconfig", c.kubeconfigPath(controllerServiceAccount),
			"--listen", "127.0.0.1", "--port", strconv.Itoa(c.ControllerPort),
			"--prom-cert-file", c.pki("kubevirt-controller-certs", "tls.crt"), "--prom-key-file", c.pki("kubevirt-controller-certs", "tls.key"),
			"--launcher-image", LauncherImage},
		ServiceAccountDir: c.serviceAccountDir(controllerServiceAccount),
		Ready: func(ctx context.Context) error {
			// /leader answers 200 either way; the body says whether it leads.
			body, err := get(ctx, controller, "https://"+hostPort(c.ControllerPort)+"/leader")
			if err == nil && !strings.Contains(strings.ReplaceAll(body, " ", ""), `"leader":"true"`) {
				err = errors.New("virt-controller: not the leader yet")
			}
			return err
		},
	}}, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// get fetches url and fails unless it answers 200.
func get(ctx context.Context, client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return string(body), nil
}
