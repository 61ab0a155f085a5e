// Package tools holds the checks on the pinned test tools' versions. The
// Kubernetes tools and rancher-machine are `tool`s of the project's own
// module (go.mod; etcd's main package is test/tools/etcd); kube-vip and
// golangci-lint are separate modules under test/tools/. build.sh builds them.
package tools

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/harvester-kit/harvester-machine/guest/addons"
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
