package layout

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/harvester-kit/harvester-machine/sim/guests"
)

// upstream is a component a hand-written stand-in under sim/ follows: its
// name, its GitHub repository and the tag or commit of the source read.
type upstream struct {
	name, repo, ref string
	// pinned, when set, is the module of the project's module graph
	// whose version ref must be: the release the real processes are
	// built from.
	pinned string
	// chart, when set, is the dependency of the Harvester chart (in the
	// pinned Harvester module) whose version, with a "v", ref must be:
	// the component the Harvester release that runs here ships.
	chart string
}

var (
	kubelet = upstream{"Kubernetes", "kubernetes/kubernetes", "v1.34.4", "k8s.io/kubernetes", ""}
	// KubeVirt's tools are the release of kubevirt.io/api (test/tools).
	kubeVirt  = upstream{"KubeVirt", "kubevirt/kubevirt", "v1.7.0", "kubevirt.io/api", ""}
	harvester = upstream{"Harvester", "harvester/harvester", "v1.8.1", "github.com/harvester/harvester", ""}
	// The longhorn-manager Harvester v1.8.1's go.mod requires.
	longhorn = upstream{"Longhorn", "longhorn/longhorn-manager", "v1.10.0", "github.com/longhorn/longhorn-manager", ""}
	// The harvester-load-balancer chart Harvester's chart ships, whose
	// appVersion (the image's tag) is its version.
	loadBalancer = upstream{"load-balancer-harvester", "harvester/load-balancer-harvester", "v1.8.1", "", "harvester-load-balancer"}
	// The add-on's main branch: the static-ip VM annotation (after
	// v1.9.0-rc1; REFERENCE.md, managed DHCP).
	vmDHCP = upstream{"vm-dhcp-controller", "harvester/vm-dhcp-controller", "c3042d6cff7d939b6d939d2f6ef2b019ba3a0870", "", ""}
	// The cloud-init sim/userdata follows.
	cloudInit = upstream{"cloud-init", "canonical/cloud-init", "26.2", "", ""}
	// The K3s release whose kubelet the simulated guests report.
	k3s = upstream{"K3s", "k3s-io/k3s", guests.KubeletVersion, "", ""}
)

// standInPackages are the packages of sim/ that hold hand-written
// stand-ins; every file of theirs (but tests) is in standIns or in
// simOwn.
var standInPackages = []string{"sim/controllers", "sim/lb", "sim/userdata", "sim/guests"}

// standIns lists every hand-written file that stands in for an upstream
// component, with the upstream it follows. Its first comment says
// "Stand-in for", names the upstream and its version and links the
// source file it follows at that version.
var standIns = map[string]upstream{
	"sim/controllers/kubelet.go":               kubelet,
	"sim/controllers/kubelet_server.go":        kubelet,
	"sim/controllers/heartbeat.go":             kubelet,
	"sim/controllers/hostdown.go":              kubelet,
	"sim/controllers/imageid.go":               kubelet,
	"sim/controllers/handler.go":               kubeVirt,
	"sim/controllers/handler_client.go":        kubeVirt,
	"sim/controllers/handler_guest.go":         kubeVirt,
	"sim/controllers/handler_migration.go":     kubeVirt,
	"sim/controllers/handler_node.go":          kubeVirt,
	"sim/controllers/handler_rest.go":          kubeVirt,
	"sim/controllers/handler_status.go":        kubeVirt,
	"sim/controllers/handler_volumes.go":       kubeVirt,
	"sim/controllers/migratable.go":            kubeVirt,
	"sim/controllers/network.go":               kubeVirt,
	"sim/controllers/guestosinfo.go":           kubeVirt,
	"sim/controllers/guestagent.go":            cloudInit,
	"sim/controllers/staticnet.go":             cloudInit,
	"sim/controllers/pvc_controller.go":        longhorn,
	"sim/controllers/harvester.go":             harvester,
	"sim/controllers/harvester_controllers.go": harvester,
	"sim/controllers/lb_controller.go":         loadBalancer,
	"sim/controllers/dhcp_controller.go":       vmDHCP,
	"sim/controllers/dhcp_alloc.go":            vmDHCP,
	"sim/lb/ippool.go":                         loadBalancer,
	"sim/lb/pool.go":                           loadBalancer,
	"sim/lb/select.go":                         loadBalancer,
	"sim/userdata/walk.go":                     cloudInit,
	"sim/userdata/logins.go":                   cloudInit,
	"sim/userdata/root.go":                     cloudInit,
	"sim/userdata/writefiles.go":               cloudInit,
	"sim/guests/cloudinit.go":                  kubeVirt,
	"sim/guests/deploy.go":                     k3s,
	"sim/guests/manifests.go":                  k3s,
	"sim/guests/node.go":                       kubelet,
	"sim/lbpolicy.go":                          loadBalancer,
	"sim/podcontainer.go":                      kubelet,
	"sim/upgrade.go":                           harvester,
	"sim/upgrade_evacuation.go":                harvester,
	"sim/upgrade_object.go":                    harvester,
	"sim/upgrade_restore.go":                   harvester,
}

// simOwn are the files of standInPackages that follow no upstream: the
// simulator's own plumbing (API calls, queues, decoding, events, faults).
var simOwn = []string{
	"sim/controllers/apiutil.go", "sim/controllers/decode.go", "sim/controllers/events.go",
	"sim/controllers/faultack.go", "sim/controllers/guestnet.go", "sim/controllers/host.go", "sim/controllers/queue.go",
	"sim/controllers/register.go", "sim/controllers/start.go", "sim/controllers/tunables.go", "sim/controllers/unknownfields.go",
	"sim/controllers/vmi_state.go", "sim/controllers/volumes.go",
	"sim/guests/controller.go", "sim/guests/hostdown.go",
}

// standInProblems says what the first comment of a stand-in's source
// lacks: "Stand-in for", the upstream's name, its version and the link
// to a file of its repository at that version.
func standInProblems(file string, src []byte, u upstream) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return []string{err.Error()}
	}
	if len(f.Comments) == 0 {
		return []string{"no comment"}
	}
	first := strings.Join(strings.Fields(f.Comments[0].Text()), " ")
	link := fmt.Sprintf("https://github.com/%s/blob/%s/", u.repo, u.ref)
	version := u.ref
	if len(version) == 40 {
		version = version[:7] // a commit, named short
	}
	var bad []string
	for _, want := range []string{"Stand-in for ", u.name, version, link} {
		if !strings.Contains(first, want) {
			bad = append(bad, fmt.Sprintf("its first comment lacks %q", want))
		}
	}
	if i := strings.Index(first, link); i >= 0 && !strings.Contains(first[i+len(link):], ".") {
		bad = append(bad, "the link names no file")
	}
	return bad
}

// TestStandInsNameTheirUpstream: every hand-written stand-in names in its
// first comment the upstream component, version and source file it
// follows, and the versions of the pinned ones are those the project
// builds the real processes from, or that the Harvester release it runs
// ships in its chart.
func TestStandInsNameTheirUpstream(t *testing.T) {
	for file, u := range standIns {
		src, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		for _, p := range standInProblems(file, src, u) {
			t.Errorf("%s: %s", file, p)
		}
		if u.pinned != "" {
			if got := moduleVersion(t, u.pinned); got != u.ref {
				t.Errorf("%s follows %s %s; the module graph has %s %s", file, u.name, u.ref, u.pinned, got)
			}
		}
		if u.chart != "" {
			if got := "v" + harvesterChartDependency(t, u.chart); got != u.ref {
				t.Errorf("%s follows %s %s; Harvester's chart ships %s %s", file, u.name, u.ref, u.chart, got)
			}
		}
	}
}

// TestStandInPackagesAreListed: every file of the stand-in packages is
// either a stand-in or the simulator's own, so a new one must be placed.
func TestStandInPackagesAreListed(t *testing.T) {
	for _, dir := range standInPackages {
		files, err := filepath.Glob(filepath.Join("../..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := filepath.ToSlash(strings.TrimPrefix(f, "../../"))
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			_, standIn := standIns[name]
			if own := slices.Contains(simOwn, name); standIn == own {
				t.Errorf("%s: list it in exactly one of standIns and simOwn (test/layout/standins_test.go)", name)
			}
		}
	}
}

func TestStandInWithoutUpstreamIsCaught(t *testing.T) {
	good := "// Stand-in for the kubelet, Kubernetes v1.34.4: Pods. It follows\n" +
		"// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/kubelet.go.\n\npackage x\n"
	if p := standInProblems("good.go", []byte(good), kubelet); len(p) != 0 {
		t.Errorf("a complete header: %v", p)
	}
	for name, src := range map[string]string{
		"no comment":      "package x\n",
		"another version": strings.ReplaceAll(good, "v1.34.4", "v1.33.0"),
		"no link":         "// Stand-in for the kubelet, Kubernetes v1.34.4.\n\npackage x\n",
		"another first":   "// Package x does things.\n\n" + good,
	} {
		if p := standInProblems(name+".go", []byte(src), kubelet); len(p) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
}

// moduleVersion returns the version of module in the project's module
// graph (`go list -m`).
func moduleVersion(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

// harvesterChartDependency returns the version at which the chart of the
// Harvester module in the project's module graph
// (deploy/charts/harvester/Chart.yaml) depends on chart.
func harvesterChartDependency(t *testing.T, chart string) string {
	t.Helper()
	const module = "github.com/harvester/harvester"
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+moduleVersion(t, module)).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", module, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("go mod download %s: %v", module, err)
	}
	data, err := os.ReadFile(filepath.Join(m.Dir, "deploy/charts/harvester/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Dependencies []struct{ Name, Version string }
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("Harvester's Chart.yaml: %v", err)
	}
	for _, d := range c.Dependencies {
		if d.Name == chart {
			return d.Version
		}
	}
	t.Fatalf("Harvester's Chart.yaml has no dependency %s", chart)
	return ""
}
