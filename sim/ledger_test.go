package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRequestTotal: every series of apiserver_request_total is summed, in
// Prometheus' text format as kube-apiserver's /metrics writes it (HELP and
// TYPE lines, labels, values in float notation); other metrics, including
// those whose name only begins the same way, are not.
func TestRequestTotal(t *testing.T) {
	body := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 12
apiserver_request_total{code="201",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachines",scope="resource",subresource="",verb="POST",version="v1"} 3.5e+01
apiserver_request_total_extra{code="200"} 1000
apiserver_request_duration_seconds_count{verb="GET"} 500
apiserver_request_total 3
`
	got, err := requestTotal(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if got != 50 {
		t.Errorf("requestTotal = %v, want 50 (12 + 35 + 3)", got)
	}
	if _, err := requestTotal(strings.NewReader("apiserver_request_total{verb=\"GET\"} x\n")); err == nil {
		t.Error("a value that is not a number: want an error")
	}
}

func TestLedgerLine(t *testing.T) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	e := ledgerEntry{start: start, stop: start.Add(90 * time.Second), ready: true, requests: 45678, counted: true}
	want := "harvester-sim start=2026-12-07T10:00:00Z stop=2026-12-07T10:01:30Z minutes=1.50 ready=true requests=45678\n"
	if got := e.String(); got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	e.counted = false
	if got := e.String(); !strings.HasSuffix(got, " requests=?\n") {
		t.Errorf("line %q: an incomplete count must read requests=?", got)
	}
}

// TestAppendLedger: each simulator appends its line; no path, no file.
func TestAppendLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for i := range 2 {
		if err := appendLedger(path, ledgerEntry{start: start, stop: start.Add(time.Duration(i+1) * time.Minute), counted: true}); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "minutes=1.00") || !strings.Contains(lines[1], "minutes=2.00") {
		t.Errorf("ledger %q, want two lines of 1 and 2 minutes", data)
	}
	if err := appendLedger("", ledgerEntry{}); err != nil {
		t.Errorf("no path: %v", err)
	}
}
