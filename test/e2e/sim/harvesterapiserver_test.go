package sim_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/harvester-kit/harvester-machine/sim"
	"github.com/harvester-kit/harvester-machine/sim/hapiserver"
)

// TestHarvesterAPIServerRunsFromBin: Harvester's own API server runs as a
// child of the simulator from bin/, seeing a Pod's ServiceAccount files
// with namespace harvester-system; it holds its controllers' Lease
// kube-system/harvester-controllers (pkg/controller/master/setup.go) and
// its node controllers have put their finalizer on every host (wrangler's
// OnRemove, pkg/controller/master/node/node_remove_controller.go).
func TestHarvesterAPIServerRunsFromBin(t *testing.T) {
	// The Lease first: it waits while a restart (after this package's
	// kube-apiserver faults) is under way.
	checkLeads(t, time.Now().Add(-time.Minute), "harvester", "kube-system", "harvester-controllers")
	checkHarvesterPod(t, "harvester")
	nodes, err := kube.CoreV1().Nodes().List(testContext(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if !slices.Contains(n.Finalizers, "wrangler.cattle.io/node-remove-controller") {
			t.Errorf("host %s finalizers %v: want Harvester's node-remove-controller's", n.Name, n.Finalizers)
		}
	}
}

// TestSchemaDefinitionsNotFetched: the simulator gives Harvester's API
// server steve's refresh settings (CATTLE_CRD_REFRESH_DELAY_SECONDS and
// CATTLE_BACKGROUND_REFRESH_MINUTES), so steve's schemaDefinitions handler
// has not fetched /openapi/v2 within the simulator's first hour: by
// steve v0.7.17's pkg/schema/definitions/handler.go, a definition of a
// CRD's kind (not a base schema) then answers 503 SchemasNotRefreshed,
// "schema definitions not yet refreshed". With steve's defaults it fetches
// 2 s after the start's last CRD event and answers 200. The schema
// controller behind /v1/harvester is not delayed: its node API serves.
func TestSchemaDefinitionsNotFetched(t *testing.T) {
	base := servingHarvesterURL(t)
	ctx := testContext(t)
	pool, err := hapiserver.ServingCA(ctx, kube)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	get := func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, string(body)
	}
	// A Harvester started again (after this package's kube-apiserver
	// faults) serves its node API before steve's schema controller has
	// listed the CRDs; until then the handler answers 404 "no such schema"
	// (handler.go's pseudo-access check), which says nothing of the refresh.
	waitSchema(t, get, "harvesterhci.io.setting")
	code, body := get("/v1/schemaDefinitions/harvesterhci.io.setting")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "schema definitions not yet refreshed") {
		t.Errorf("GET /v1/schemaDefinitions/harvesterhci.io.setting: %d %.200s, want 503 \"schema definitions not yet refreshed\"", code, body)
	}
	if code, body := get("/v1/harvester/nodes/harvester-node-0"); code != http.StatusOK {
		t.Errorf("GET /v1/harvester/nodes/harvester-node-0: %d %.200s, want 200", code, body)
	}
}

// servingHarvesterURL waits until Harvester's API server serves its node
// API and returns its URL. A test may begin while it is down: Harvester
// exits when it loses its leader Lease (as after this package's
// kube-apiserver faults), and the simulator starts it again, as the kubelet
// would after a crash-loop back-off of up to 5 minutes, on fresh ports whose
// URL it writes anew. So the URL is read again at each attempt.
func servingHarvesterURL(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	for {
		raw, err := os.ReadFile(filepath.Join(simulator.Dir, sim.HarvesterAPIServerDir, sim.HarvesterURLFile))
		if err != nil {
			t.Fatal(err)
		}
		u := strings.TrimSpace(string(raw))
		attempt, stop := context.WithTimeout(ctx, 15*time.Second)
		err = hapiserver.WaitServing(attempt, kube, u, "harvester-node-0")
		stop()
		if err == nil {
			return u
		}
		if ctx.Err() != nil {
			t.Fatalf("Harvester's API server does not serve: %v", err)
		}
	}
}

// waitSchema waits until steve's /v1/schemas lists the schema id, which
// its schema controller does once it has listed the CRDs.
func waitSchema(t *testing.T, get func(string) (int, string), id string) {
	t.Helper()
	var code int
	var body string
	err := wait.PollUntilContextTimeout(testContext(t), time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		code, body = get("/v1/schemas/" + id)
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("GET /v1/schemas/%s: %d %.200s, want 200: %v", id, code, body, err)
	}
}
