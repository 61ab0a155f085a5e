// Package layout checks that the module's import arrows point down only:
// cmd/ -> the front ends (driver/, bootstrap/) -> guest/ -> internal/;
// test/ may import the others. Inside driver/ the packages are layered too
// (see driverLayers). sim/ imports no package of the product, only the
// plumbing of internal/ that simPlumbing lists: the simulator is nobody's
// oracle but Harvester's. Every hand-written stand-in under sim/ names the
// upstream source it follows (standins_test.go).
package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
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

// driverLayers lists, for each package of driver/, the packages of driver/
// it may import, directly or through another package (its tests too): the
// libmachine adapter (driver) on top; the create flow (create) under it;
// the concerns under those (static
// addresses, capacity, removal, power, the pre-create checks that need the
// cluster, the cloud-provider credential), none importing another, each
// taking the one machine by hand; the machine (identity, ownership, waits)
// and the pure VM spec under those; the flags and their checks (config)
// and the Harvester API layer at the bottom; drivertest, what their tests
// share, imports only that API layer (its fake Harvester serves it);
// drivertest/plans, the machine fixtures of the tests of vmspec (external)
// and of the packages above it. A new package of driver/ must be placed here.
var driverLayers = map[string][]string{
	"driver":                  {"driver/capacity", "driver/cloudcred", "driver/config", "driver/create", "driver/drivertest", "driver/drivertest/plans", "driver/harvesterapi", "driver/machine", "driver/power", "driver/precheck", "driver/removal", "driver/staticaddr", "driver/vmspec"},
	"driver/create":           {"driver/capacity", "driver/cloudcred", "driver/config", "driver/drivertest", "driver/harvesterapi", "driver/machine", "driver/precheck", "driver/removal", "driver/staticaddr", "driver/vmspec"},
	"driver/capacity":         {"driver/config", "driver/drivertest/plans", "driver/harvesterapi", "driver/machine", "driver/vmspec"},
	"driver/cloudcred":        {"driver/config", "driver/harvesterapi", "driver/machine", "driver/vmspec"},
	"driver/precheck":         {"driver/config", "driver/drivertest", "driver/harvesterapi", "driver/machine", "driver/vmspec"},
	"driver/removal":          {"driver/config", "driver/drivertest/plans", "driver/harvesterapi", "driver/machine", "driver/vmspec"},
	"driver/staticaddr":       {"driver/config", "driver/harvesterapi", "driver/machine", "driver/vmspec"},
	"driver/power":            {"driver/config", "driver/drivertest", "driver/harvesterapi", "driver/machine"},
	"driver/machine":          {"driver/config", "driver/harvesterapi"},
	"driver/vmspec":           {"driver/config", "driver/drivertest", "driver/drivertest/plans"},
	"driver/config":           {"driver/drivertest"},
	"driver/harvesterapi":     {},
	"driver/drivertest":       {"driver/harvesterapi"},
	"driver/drivertest/plans": {"driver/config", "driver/drivertest", "driver/harvesterapi", "driver/vmspec"},
}

// simPlumbing are the only packages outside sim/ that a package of sim/
// may import, directly or through another package (its tests too): types,
// names and clients, no rule of the product (docs/layout.md says why each
// is plumbing). Every rule the simulator plays is its own, written from
// Harvester's and KubeVirt's source.
var simPlumbing = []string{"internal/kubeapi", "internal/lbapi", "internal/dhcpapi"}

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
	for _, imp := range slices.Concat(p.Deps, p.TestImports, p.XTestImports) {
		for _, f := range forbidden[tier(p.ImportPath)] {
			if tier(imp) == f {
				bad = append(bad, imp)
			}
		}
	}
	return bad
}

// simForeign lists the imports of p, a package of sim/ (its transitive
// dependencies, and its tests' direct imports), that are packages of the
// module outside sim/ and not in simPlumbing.
func simForeign(p pkg) []string {
	var bad []string
	for _, imp := range slices.Concat(p.Deps, p.TestImports, p.XTestImports) {
		name := strings.TrimPrefix(imp, module)
		if t := tier(imp); t != "" && t != "sim" && !slices.Contains(simPlumbing, name) {
			bad = append(bad, imp)
		}
	}
	return bad
}

// driverUpward lists the imports of p, a package of driver/, that
// driverLayers does not allow; ok is false for a package it does not
// place.
func driverUpward(p pkg) (bad []string, ok bool) {
	self := strings.TrimPrefix(p.ImportPath, module)
	allowed, ok := driverLayers[self]
	if !ok {
		return nil, false
	}
	for _, imp := range slices.Concat(p.Deps, p.TestImports, p.XTestImports) {
		name := strings.TrimPrefix(imp, module)
		if tier(imp) == "driver" && name != self && !slices.Contains(allowed, name) {
			bad = append(bad, imp)
		}
	}
	return bad, true
}

func TestArrowsPointDown(t *testing.T) {
	pkgs := listModule(t)
	tiers := map[string]bool{}
	for _, p := range pkgs {
		tiers[tier(p.ImportPath)] = true
		for _, imp := range upward(p) {
			t.Errorf("%s imports %s: %s may not import %s/", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(imp, module), tier(p.ImportPath), tier(imp))
		}
		if tier(p.ImportPath) == "sim" {
			for _, imp := range simForeign(p) {
				t.Errorf("%s imports %s: sim/ imports only %v outside sim/", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(imp, module), simPlumbing)
			}
		}
		if tier(p.ImportPath) != "driver" {
			continue
		}
		bad, placed := driverUpward(p)
		if !placed {
			t.Errorf("%s is not placed in driverLayers", strings.TrimPrefix(p.ImportPath, module))
		}
		for _, imp := range bad {
			t.Errorf("%s imports %s: driverLayers does not allow it", strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(imp, module))
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

// TestSimForeignImportIsCaught: a package of sim/ that reaches the
// product (driver/, bootstrap/, guest/, a rule of internal/), directly,
// through another package or from its tests, is caught; the plumbing is
// not.
func TestSimForeignImportIsCaught(t *testing.T) {
	cases := []pkg{
		{ImportPath: module + "sim", Deps: []string{module + "bootstrap/maintenance"}},
		{ImportPath: module + "sim/controllers", Deps: []string{module + "internal/harvester"}},
		{ImportPath: module + "sim/kubevip", TestImports: []string{module + "guest/addons"}},
		{ImportPath: module + "sim/lb", XTestImports: []string{module + "driver/config"}},
		{ImportPath: module + "sim/webhook", Deps: []string{module + "internal/daemonset"}},
		{ImportPath: module + "sim/fault", Deps: []string{module + "test/simtest"}},
	}
	for _, p := range cases {
		if bad := simForeign(p); len(bad) != 1 {
			t.Errorf("%s: foreign imports %v, want one", p.ImportPath, bad)
		}
	}
	ok := pkg{ImportPath: module + "sim/controllers", Deps: []string{module + "sim/hv", module + "internal/kubeapi", module + "internal/lbapi", module + "internal/dhcpapi", "kubevirt.io/api/core/v1"}}
	if bad := simForeign(ok); len(bad) != 0 {
		t.Errorf("plumbing flagged: %v", bad)
	}
}

// TestDriverUpwardImportIsCaught: inside driver/, an arrow pointing up or
// sideways, and a package driverLayers does not place, are caught.
func TestDriverUpwardImportIsCaught(t *testing.T) {
	cases := []pkg{
		{ImportPath: module + "driver/vmspec", Deps: []string{module + "driver/machine"}},
		{ImportPath: module + "driver/config", Deps: []string{module + "driver"}},
		{ImportPath: module + "driver/machine", TestImports: []string{module + "driver/staticaddr"}},
		{ImportPath: module + "driver/removal", XTestImports: []string{module + "driver/power"}},
		{ImportPath: module + "driver/staticaddr", Deps: []string{module + "driver/capacity"}},
		{ImportPath: module + "driver/harvesterapi", Deps: []string{module + "driver/config"}},
		{ImportPath: module + "driver/precheck", Deps: []string{module + "driver/capacity"}},
		{ImportPath: module + "driver/cloudcred", TestImports: []string{module + "driver/removal"}},
		{ImportPath: module + "driver/config", Deps: []string{module + "driver/vmspec"}},
	}
	for _, p := range cases {
		if bad, _ := driverUpward(p); len(bad) != 1 {
			t.Errorf("%s: upward imports %v, want one", p.ImportPath, bad)
		}
	}
	if _, placed := driverUpward(pkg{ImportPath: module + "driver/newroom"}); placed {
		t.Error("a package missing from driverLayers counts as placed")
	}
	ok := pkg{ImportPath: module + "driver/capacity", Deps: []string{module + "driver/machine", module + "driver/vmspec", module + "driver/config", module + "internal/harvester"}}
	if bad, _ := driverUpward(ok); len(bad) != 0 {
		t.Errorf("downward imports flagged: %v", bad)
	}
}
