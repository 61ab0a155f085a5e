package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// LedgerEnv names the ledger file (flag --ledger): each simulator appends
// one line to it when it stops, so that a test run can say how many
// simulators it started, how long they lived and how many requests their
// kube-apiservers served (test/gotest-jobs.sh sums it).
const LedgerEnv = "HARVESTER_SIM_LEDGER"

// requestsMetric is kube-apiserver's counter of the requests it has served
// (k8s.io/apiserver/pkg/endpoints/metrics: apiserver_request_total, one
// series per verb, resource, code, ...), counted when a request completes.
const requestsMetric = "apiserver_request_total"

// scrapeTimeout bounds the read of kube-apiserver's /metrics at a stop.
const scrapeTimeout = 5 * time.Second

// ledgerEntry is one simulator's line in the ledger.
type ledgerEntry struct {
	start, stop time.Time
	ready       bool
	// requests is the sum of apiserver_request_total over every
	// kube-apiserver process the simulator ran (a restart starts its
	// counters again), read as each one stopped; counted says every read
	// succeeded.
	requests float64
	counted  bool
}

// String is the entry's line: space-separated key=value fields, the
// minutes alive and requests among them ("?" when a read failed).
func (e ledgerEntry) String() string {
	requests := "?"
	if e.counted {
		requests = strconv.FormatFloat(e.requests, 'f', 0, 64)
	}
	return fmt.Sprintf("harvester-sim start=%s stop=%s minutes=%.2f ready=%t requests=%s\n",
		e.start.UTC().Format(time.RFC3339), e.stop.UTC().Format(time.RFC3339),
		e.stop.Sub(e.start).Minutes(), e.ready, requests)
}

// appendLedger appends the entry to path in one write (O_APPEND: the
// simulators of a test run share the file); no path, no ledger.
func appendLedger(path string, e ledgerEntry) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	_, err = f.WriteString(e.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// requestTotal sums every series of requestsMetric in a Prometheus text
// exposition.
func requestTotal(r io.Reader) (float64, error) {
	var total float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, requestsMetric)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if rest[0] == '{' { // the value (and maybe a timestamp) follows the labels
			rest = rest[strings.LastIndexByte(rest, '}')+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s: no value in %q", requestsMetric, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", requestsMetric, err)
		}
		total += v
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", requestsMetric, err)
	}
	return total, nil
}

// countServed adds what the running kube-apiserver has served to the
// ledger's count, before it stops; a kube-apiserver that has exited
// cannot say, and the count is then incomplete.
func (c *controlPlane) countServed(ctx context.Context) {
	if !c.countRequests || c.apiserver == nil {
		return
	}
	if c.apiserver.ended() {
		c.requestsIncomplete = true
		return
	}
	n, err := c.scrapeRequests(ctx)
	if err != nil {
		c.requestsIncomplete = true
		return
	}
	c.requestsServed += n
}

// scrapeRequests reads requestsMetric from kube-apiserver's /metrics as
// its administrator.
func (c *controlPlane) scrapeRequests(ctx context.Context) (float64, error) {
	client, err := c.adminHTTPClient()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("kube-apiserver /metrics: %s", resp.Status)
	}
	return requestTotal(resp.Body)
}
