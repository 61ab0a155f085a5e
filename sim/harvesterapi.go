package sim

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/sim/hapiserver"
)

// harvesterAPI is Harvester's own API server (bin/harvester) as
// `harvester-sim maintenance` calls it. Harvester authenticates no request
// itself: pkg/server/types.go wraps steve in
// steveauth.AlwaysAdmin, every request is admin's (on Harvester, Rancher's
// proxy in front of it authenticates the user). So no credential is sent;
// the server's certificate is checked against the CA it made.
type harvesterAPI struct {
	base   string
	client *http.Client
}

// newHarvesterAPI reads the API server's URL from the state directory and
// its serving CA from the cluster.
func newHarvesterAPI(ctx context.Context, kube kubernetes.Interface, stateDir string) (*harvesterAPI, error) {
	raw, err := os.ReadFile(filepath.Join(stateDir, HarvesterAPIServerDir, HarvesterURLFile))
	if err != nil {
		return nil, fmt.Errorf("harvester API server: read its URL: %w", err)
	}
	pool, err := hapiserver.ServingCA(ctx, kube)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Proxy: nil}
	return &harvesterAPI{base: strings.TrimSpace(string(raw)), client: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}, nil
}

// nodeAction posts a node action (pkg/api/node/schema.go) with its input
// as JSON. A refusal is an error carrying Harvester's message: the
// handler writes its error as the body (pkg/server/http/handler.go),
// steve a JSON error with a message.
func (h *harvesterAPI) nodeAction(ctx context.Context, host, action string, input any) error {
	body, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("node action %s: %w", action, err)
	}
	u := h.base + "/v1/harvester/nodes/" + url.PathEscape(host) + "?action=" + url.QueryEscape(action)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("node action %s: %w", action, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("node action %s on %s: %w", action, host, err)
	}
	defer func() { _ = resp.Body.Close() }()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return &actionRefused{message: apiMessage(msg, resp.Status)}
}

// actionRefused is a node action's non-2xx answer: Harvester's message.
type actionRefused struct{ message string }

func (e *actionRefused) Error() string { return e.message }

// apiMessage is the message of an error body: steve's JSON error's
// "message", else the body as it is, else the HTTP status.
func apiMessage(body []byte, status string) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	if s := strings.TrimSpace(string(body)); s != "" {
		return s
	}
	return "HTTP " + status + " without a message"
}
