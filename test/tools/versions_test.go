// Package tools holds the checks on the pinned test tools' versions. The
// Kubernetes tools and rancher-machine are `tool`s of the project's own
// module (go.mod; etcd's main package is test/tools/etcd); kube-vip,
// KubeVirt's virt-api and virt-controller (test/tools/kubevirt),
// Harvester's webhook (test/tools/harvester) and the linters are separate
// modules under test/tools/. build.sh builds them.
package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/sim/kubevirt"
)

// requiredVersion returns the version go.mod at path requires of module.
func requiredVersion(t *testing.T, path, module string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("%s requires no %s", path, module)
	return ""
}

// TestKubeVIPToolFollowsTheGuestsImage: the kube-vip the tests and the demo
// run (test/tools/kubevip, v1.2.2: the newest release the Go module proxy
// serves) is at most one patch release from the image the guests run
// (addons.KubeVIPVersion, the tag of Harvester's chart).
func TestKubeVIPToolFollowsTheGuestsImage(t *testing.T) {
	tool := version.MustParseSemantic(requiredVersion(t, "kubevip/go.mod", "github.com/kube-vip/kube-vip"))
	image := version.MustParseSemantic(addons.KubeVIPVersion)
	if skew := int(image.Patch()) - int(tool.Patch()); tool.Major() != image.Major() || tool.Minor() != image.Minor() || skew < -1 || skew > 1 {
		t.Fatalf("kube-vip test tool %s and the guests' image %s differ by more than one patch release: move test/tools/kubevip/go.mod to the nearest release the module proxy serves", tool, image)
	}
}

// TestKubernetesStagingFollowsTheRelease: the Kubernetes tools are built
// from the project's module, so every k8s.io staging module it replaces
// (client-go, apiserver, ...; k8s.io/kubernetes requires them as v0.0.0) is
// the one Kubernetes released with the pinned k8s.io/kubernetes: v1.M.P
// ships staging v0.M.P. A product and tools on other staging versions would
// not be the released kube-apiserver and kube-controller-manager.
func TestKubernetesStagingFollowsTheRelease(t *testing.T) {
	kube := version.MustParseSemantic(requiredVersion(t, "../../go.mod", "k8s.io/kubernetes"))
	want := fmt.Sprintf("v0.%d.%d", kube.Minor(), kube.Patch())
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	staging := 0
	for _, line := range strings.Split(string(data), "\n") {
		// k8s.io/api => k8s.io/api v0.34.4
		f := strings.Fields(line)
		if len(f) != 4 || f[1] != "=>" || !strings.HasPrefix(f[0], "k8s.io/") || f[2] != f[0] {
			continue
		}
		if f[0] == "k8s.io/kube-openapi" || f[0] == "k8s.io/utils" || f[0] == "k8s.io/klog/v2" {
			continue // not staging: pinned by commit in Kubernetes' go.mod
		}
		staging++
		if f[3] != want {
			t.Errorf("go.mod replaces %s with %s: k8s.io/kubernetes %s ships %s", f[0], f[3], kube, want)
		}
	}
	if staging < 20 {
		t.Errorf("go.mod replaces %d k8s.io staging modules; k8s.io/kubernetes %s needs each it requires as v0.0.0", staging, kube)
	}
}

// goModVersions is what the go.mod at path builds with: each required
// module's version, or the version its replace names (`go mod edit -json`).
func goModVersions(t *testing.T, path string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	type module struct{ Path, Version string }
	var mod struct {
		Require []module
		Replace []struct{ Old, New module }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	versions := map[string]string{}
	for _, r := range mod.Require {
		versions[r.Path] = r.Version
	}
	for _, r := range mod.Replace {
		if _, ok := versions[r.Old.Path]; ok && r.New.Version != "" {
			versions[r.Old.Path] = r.New.Version // a module replaced by a version, not a directory
		}
	}
	return versions
}

// TestKubeVirtToolFollowsTheAPI: virt-api and virt-controller
// (test/tools/kubevirt) are the KubeVirt release whose API the product and
// the simulator use (kubevirt.io/api in go.mod), and build its served
// kubevirt.io/api and kubevirt.io/client-go, not KubeVirt's staging copies;
// the simulator writes that version into the KubeVirt CR's status.
func TestKubeVirtToolFollowsTheAPI(t *testing.T) {
	api := goModVersions(t, "../../go.mod")["kubevirt.io/api"]
	if kubevirt.Version != api {
		t.Errorf("sim/kubevirt.Version %s, kubevirt.io/api %s", kubevirt.Version, api)
	}
	tool := goModVersions(t, "kubevirt/go.mod")
	for _, m := range []string{"kubevirt.io/kubevirt", "kubevirt.io/api", "kubevirt.io/client-go"} {
		if tool[m] != api {
			t.Errorf("test/tools/kubevirt builds %s %s; the project's kubevirt.io/api is %s: move them together", m, tool[m], api)
		}
	}
}

// TestKubeVirtToolSharesTheBuildCache: every module both the project's
// go.mod and test/tools/kubevirt's require (k8s.io above all) is at the
// same version, so the Go build cache compiles what they share once. With
// KubeVirt's own pins (k8s.io v0.33) nothing would be shared.
func TestKubeVirtToolSharesTheBuildCache(t *testing.T) {
	project, tool := goModVersions(t, "../../go.mod"), goModVersions(t, "kubevirt/go.mod")
	shared := 0
	for m, v := range tool {
		pv, ok := project[m]
		if !ok {
			continue
		}
		shared++
		if pv != v {
			t.Errorf("test/tools/kubevirt/go.mod has %s %s; the project's go.mod %s: align them", m, v, pv)
		}
	}
	if k8s := tool["k8s.io/client-go"]; k8s != project["k8s.io/client-go"] || shared < 40 {
		t.Errorf("test/tools/kubevirt shares %d modules with the project, client-go %s: want k8s.io aligned (%s)", shared, k8s, project["k8s.io/client-go"])
	}
}
