package controllers

import (
	"regexp"
	"strings"
	"testing"
)

// Image IDs in containerd's form (a repo digest of the normalized
// repository), stable for one image, the digest of a digested reference
// kept; each carries what KubeVirt v1.7's toImageWithDigest looks for
// (pkg/container-disk: digestRegex `sha256:([a-zA-Z0-9]+)`).
func TestImageID(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	hexDigest := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, tc := range []struct{ image, repo, digest string }{
		{"busybox", "docker.io/library/busybox", ""},
		{"quay.io/kubevirt/cirros-container-disk-demo:v1.7.0", "quay.io/kubevirt/cirros-container-disk-demo", ""},
		{"registry.local:5000/img/disk:v1@" + digest, "registry.local:5000/img/disk", digest},
		{"docker.io/library/alpine@" + digest, "docker.io/library/alpine", digest},
	} {
		got := imageID(tc.image)
		repo, d, ok := strings.Cut(got, "@sha256:")
		switch {
		case !ok || repo != tc.repo || !hexDigest.MatchString(d):
			t.Errorf("%s: %q, want %s@sha256:<64 hex>", tc.image, got, tc.repo)
		case tc.digest != "" && "sha256:"+d != tc.digest:
			t.Errorf("%s: %q, want the reference's digest %s", tc.image, got, tc.digest)
		case imageID(tc.image) != got:
			t.Errorf("%s: image ID not stable", tc.image)
		}
	}
	if imageID("busybox:1.36") == imageID("busybox:1.37") || imageID("busybox") != imageID("docker.io/library/busybox:latest") {
		t.Error("the digest is not one per image")
	}
}
