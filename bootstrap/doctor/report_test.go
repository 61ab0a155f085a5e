package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/harvester-kit/harvester-machine/internal/hostile"
)

// controls lists the control and format characters left in s, besides the
// table's own line breaks when lines is set.
func controls(s string, lines bool) []rune {
	var out []rune
	for _, r := range s {
		if (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) && (!lines || r != '\n') {
			out = append(out, r)
		}
	}
	return out
}

// Issue 33, item 7: a guest's strings (here the cloud provider's
// --cluster-name, which the ccm-cluster row quotes) reach the table and
// the JSON with their control characters escaped: no screen clearing, no
// recoloured rows, no faked rows.
func TestReportEscapesClusterStrings(t *testing.T) {
	values := append(hostile.Values(), "\x1b[2J\x1b[H", "\x1b[32mOK\x1b[0m", "x\rCHECK  OK", "\x9b2J", "\x1b]0;title\x07")
	for _, v := range values {
		s := healthy()
		s.Guest.Deployments[0] = ccm("--cluster-name=" + v)
		r := Run(s)
		row := r.Row(CheckCCMCluster)
		if row == nil || row.Status != Fail || !strings.Contains(row.Seen, "--cluster-name=") {
			t.Fatalf("%q: the ccm-cluster row does not quote the value: %+v", v, row)
		}
		var table, js bytes.Buffer
		if err := r.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		if c := controls(table.String(), true); len(c) > 0 {
			t.Errorf("%q: table keeps %q", v, string(c))
		}
		if err := r.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		var decoded struct{ Checks []Row }
		if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
			t.Fatal(err)
		}
		for _, d := range decoded.Checks {
			if c := controls(d.Check+d.Seen+d.Fix+string(d.Status), false); len(c) > 0 {
				t.Errorf("%q: JSON row %s keeps %q once decoded", v, d.Check, string(c))
			}
		}
	}
}
