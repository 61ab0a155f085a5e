// Stand-in for the kubelet, Kubernetes v1.34.4: a container's imageID as the
// kubelet reports containerd's imageRef. It follows
// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/kuberuntime/kuberuntime_container.go.

package controllers

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/distribution/reference"
)

// imageID is the image ID kubelet reports for a container of image, as
// with containerd's CRI (its container status's imageRef, the image's
// first repo digest: docker.io/library/busybox@sha256:<64 hex>): the
// normalized repository and the digest the reference names, else one
// stable for the reference (nothing is pulled, so there is no manifest to
// hash). KubeVirt v1.7 reads it to migrate a containerDisk VM with the
// same image (pkg/container-disk ExtractImageIDsFromSourcePod,
// toImageWithDigest: it needs "sha256:").
func imageID(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image // kubelet would not start it (InvalidImageName); not simulated
	}
	repo := reference.TrimNamed(named).String()
	if c, ok := named.(reference.Canonical); ok {
		return repo + "@" + c.Digest().String()
	}
	sum := sha256.Sum256([]byte(reference.TagNameOnly(named).String()))
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}
