// Package doctor says why a guest cluster on Harvester is unhealthy: each
// check is a pure function over a clusterstate.Snapshot that returns rows
// of OK / WARN / FAIL with what was seen and the fix. No row ever holds a
// secret: the snapshot has none.
package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/harvester-kit/harvester-machine/internal/termsafe"
)

// Status of one check.
type Status string

// Statuses, from good to bad.
const (
	OK   Status = "OK"
	Warn Status = "WARN"
	Fail Status = "FAIL"
)

// Row is one check's result.
type Row struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Seen   string `json:"seen"`
	Fix    string `json:"fix,omitempty"`
}

// Report is the rows of every check, in order.
type Report []Row

// Failed reports whether some row is FAIL.
func (r Report) Failed() bool {
	for _, row := range r {
		if row.Status == Fail {
			return true
		}
	}
	return false
}

// Row returns the first row of check, or nil.
func (r Report) Row(check string) *Row {
	for i := range r {
		if r[i].Check == check {
			return &r[i]
		}
	}
	return nil
}

// WriteJSON writes {"failed": bool, "checks": [rows]}.
func (r Report) WriteJSON(w io.Writer) error {
	rows := Report{}
	for _, row := range r {
		rows = append(rows, row.safe())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Failed bool   `json:"failed"`
		Checks Report `json:"checks"`
	}{r.Failed(), rows})
}

// WriteTable writes a readable table: CHECK STATUS SEEN, the fix indented
// on the next line of a row that is not OK.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tSEEN")
	for _, row := range r {
		row = row.safe()
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row.Check, row.Status, oneLine(row.Seen))
		if row.Status != OK && row.Fix != "" {
			fmt.Fprintf(tw, "\t\t  fix: %s\n", oneLine(row.Fix))
		}
	}
	return tw.Flush()
}

// safe is the row with its control characters escaped: what a row says
// comes from the clusters (names, annotations, API servers' messages).
func (row Row) safe() Row {
	row.Check, row.Seen, row.Fix = termsafe.Text(row.Check), termsafe.Text(row.Seen), termsafe.Text(row.Fix)
	row.Status = Status(termsafe.Text(string(row.Status)))
	return row
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func ok(check, seen string) Row { return Row{Check: check, Status: OK, Seen: seen} }

func warn(check, seen, fix string) Row { return Row{check, Warn, seen, fix} }

func fail(check, seen, fix string) Row { return Row{check, Fail, seen, fix} }

// listFailed is the row of a check whose objects could not be listed.
func listFailed(check, err string) Row {
	return fail(check, err, "check that --kubeconfig may list this kind in the namespace (and cluster-wide for IPPools and ClusterRoleBindings)")
}

// unlisted is the row of check when one of kinds could not be listed.
func unlisted(errs map[string]string, check string, kinds ...string) (Row, bool) {
	for _, k := range kinds {
		if e := errs[k]; e != "" {
			return listFailed(check, e), true
		}
	}
	return Row{}, false
}

// names joins up to 5 names and says how many more there are.
func names(list []string) string {
	if len(list) <= 5 {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:5], ", ") + fmt.Sprintf(" and %d more", len(list)-5)
}
