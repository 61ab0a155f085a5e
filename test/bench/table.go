package bench

import (
	"fmt"
	"strings"
	"time"
)

// Row is one line of the benchmark's table.
type Row struct {
	Metric, Value, Target string
	// Met is nil when the row has no target.
	Met *bool
}

// Table is the benchmark's result.
type Table []Row

// Add appends a row without a target.
func (t *Table) Add(metric, value string) { *t = append(*t, Row{Metric: metric, Value: value}) }

// Check appends a row with a target and whether it was met.
func (t *Table) Check(metric, value, target string, met bool) {
	*t = append(*t, Row{Metric: metric, Value: value, Target: target, Met: &met})
}

// Missed lists the metrics whose targets were missed.
func (t Table) Missed() []string {
	var out []string
	for _, r := range t {
		if r.Met != nil && !*r.Met {
			out = append(out, r.Metric)
		}
	}
	return out
}

// Markdown renders the table as a Markdown table: metric, value, target,
// and "met" / "MISSED" where there is a target.
func (t Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| metric | value | target | |\n| --- | --- | --- | --- |\n")
	for _, r := range t {
		verdict := ""
		if r.Met != nil {
			verdict = map[bool]string{true: "met", false: "MISSED"}[*r.Met]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(r.Metric), cell(r.Value), cell(r.Target), verdict)
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// Ms formats a duration in milliseconds ("12.3 ms").
func Ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// Dist formats a summary as "p50 / p95 / max (n)".
func Dist(s Summary) string {
	return fmt.Sprintf("%s / %s / %s (n=%d)", Ms(s.P50), Ms(s.P95), Ms(s.Max), s.N)
}
