package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// auditEvent is the part of a kube-apiserver audit event (audit.k8s.io/v1,
// JSON lines) the benchmark counts.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
}

// Requests counts API requests by "verb resource[/subresource]".
type Requests map[string]int

// Total is the number of requests.
func (r Requests) Total() int {
	n := 0
	for _, c := range r {
		n += c
	}
	return n
}

// String lists the counts, most frequent first, e.g. "get virtualmachines 2, create secrets 1".
func (r Requests) String() string {
	return r.Per(1)
}

// Per lists the counts divided by n (requests per machine), most frequent
// first, with one decimal where not whole.
func (r Requests) Per(n int) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r[keys[i]] != r[keys[j]] {
			return r[keys[i]] > r[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + perMachine(r[k], n)
	}
	return strings.Join(parts, ", ")
}

func perMachine(count, n int) string {
	if n <= 0 {
		n = 1
	}
	if count%n == 0 {
		return fmt.Sprint(count / n)
	}
	return fmt.Sprintf("%.1f", float64(count)/float64(n))
}

// CountRequests counts the completed requests in an audit log whose user
// agent starts with agent (client-go appends nothing when one is set, but
// a prefix also matches "agent/version" forms). Non-resource requests
// (e.g. /version) count under their verb alone.
func CountRequests(log io.Reader, agent string) (Requests, error) {
	out := Requests{}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log line %d: %w", line, err)
		}
		if ev.Stage != "ResponseComplete" && ev.Stage != "Panic" || !strings.HasPrefix(ev.UserAgent, agent) {
			continue
		}
		key := ev.Verb
		if ref := ev.ObjectRef; ref != nil && ref.Resource != "" {
			key += " " + ref.Resource
			if ref.Subresource != "" {
				key += "/" + ref.Subresource
			}
		}
		out[key]++
	}
	return out, sc.Err()
}
