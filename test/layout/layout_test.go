// Package layout checks that the module's import arrows point down only:
// cmd/ -> the front ends (driver/, bootstrap/) -> guest/ -> internal/;
// sim/ and test/ may import the others.
package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/harvester-kit/harvester-machine/"

// forbidden lists, for each tier (a package's first path element), the
// tiers it may not import, directly or through another package.
var forbidden = map[string][]string{
	"driver":    {"bootstrap", "cmd", "sim", "test"},
	"bootstrap": {"driver", "cmd", "sim", "test"},
	"guest":     {"driver", "bootstrap", "cmd", "sim", "test"},
	"internal":  {"driver", "bootstrap", "guest", "cmd", "sim", "test"},
}

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Deps         []string // every package it imports, transitively
	TestImports  []string
	XTestImports []string
}

// tier is the first path element of a package of the module ("" for
// packages outside it).
func tier(path string) string {
	rest, ok := strings.CutPrefix(path, module)
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

func listModule(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// upward lists the imports of p (its transitive dependencies, and its
// tests' direct imports) that point up or sideways.
func upward(p pkg) []string {
	var bad []string
	for _, imp := range append(append(append([]string{}, p.Deps...), p.TestImports...), p.XTestImports...) {
		for _, f := range forbidden[tier(p.ImportPath)] {
			if tier(imp) == f {
				bad = append(bad, imp)
			}
		}
	}
	return bad
}

func TestArrowsPointDown(t *testing.T) {
	pkgs := listModule(t)
	tiers := map[string]bool{}
	for _, p := range pkgs {
		tiers[tier(p.ImportPath)] = true
		for _, imp := range upward(p) {
			t.Errorf("%s imports %s: %s may not import %s/", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(imp, module), tier(p.ImportPath), tier(imp))
		}
	}
	// The check sees the module's tiers (a wrong pattern would pass
	// vacuously).
	for _, want := range []string{"driver", "bootstrap", "guest", "internal", "sim", "cmd", "test"} {
		if !tiers[want] {
			t.Errorf("go list found no package under %s/", want)
		}
	}
}

// TestUpwardImportIsCaught: the rule catches an arrow pointing up.
func TestUpwardImportIsCaught(t *testing.T) {
	cases := []pkg{
		{ImportPath: module + "driver", Deps: []string{module + "bootstrap/cli"}},
		{ImportPath: module + "guest/cloudinit", Deps: []string{module + "driver"}},
		{ImportPath: module + "guest/addons", TestImports: []string{module + "bootstrap/guest"}},
		{ImportPath: module + "internal/kubeapi", XTestImports: []string{module + "guest/credentials"}},
		{ImportPath: module + "internal/field", Deps: []string{module + "sim/fault"}},
	}
	for _, p := range cases {
		if len(upward(p)) != 1 {
			t.Errorf("%s: upward imports %v, want one", p.ImportPath, upward(p))
		}
	}
	ok := pkg{ImportPath: module + "driver", Deps: []string{module + "guest/cloudinit", module + "internal/kubeapi", "k8s.io/client-go/rest"}}
	if bad := upward(ok); len(bad) != 0 {
		t.Errorf("downward imports flagged: %v", bad)
	}
}
