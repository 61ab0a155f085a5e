// Package tools holds the checks on the pinned test tools' versions; the
// tools themselves are separate modules under test/tools/, built by
// build.sh.
package tools

import (
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
