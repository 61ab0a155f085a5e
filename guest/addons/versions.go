// Package addons renders the Harvester cloud provider (CCM), kube-vip and
// CSI driver manifests that run inside a guest cluster. Every image and version is
// pinned in this file and nowhere else, and so is every release from which
// the add-ons' guest-side RBAC changes.
package addons

import "k8s.io/apimachinery/pkg/util/version"

// Image is a container image split into the parts a user may override.
type Image struct {
	Registry   string
	Repository string
	Tag        string
}

// Ref returns registry/repository:tag, with registry replaced when override
// is not empty.
func (i Image) Ref(override string) string {
	reg := i.Registry
	if override != "" {
		reg = override
	}
	return reg + "/" + i.Repository + ":" + i.Tag
}

// AtLeast reports whether the image's tag is release since or newer. A tag
// that is not a version (a branch or digest-like name such as "main-head")
// counts as newer than every release: such builds follow the main branch.
func (i Image) AtLeast(since string) bool {
	tag, err := version.ParseGeneric(i.Tag)
	if err != nil {
		return true
	}
	return tag.AtLeast(version.MustParseGeneric(since))
}

// Versions pins every image the add-ons use.
type Versions struct {
	CloudProvider       Image
	CSIDriver           Image
	NodeDriverRegistrar Image
	Provisioner         Image
	Attacher            Image
	Resizer             Image
	Snapshotter         Image
	// KubeVIP announces LoadBalancer addresses in the guest (K3s, RKE1;
	// RKE2's bundled chart brings its own).
	KubeVIP Image
}

// Pinned releases: the newest public harvester-cloud-provider and
// harvester-csi-driver tags; CSI sidecars from registry.k8s.io.
const (
	CloudProviderVersion = "v0.2.7"
	CSIDriverVersion     = "v0.2.9"
	// KubeVIPVersion is the image Harvester's harvester-cloud-provider chart
	// (sub-chart kube-vip 0.11.0) deploys.
	KubeVIPVersion = "v1.2.3"
)

// Releases from which the guest-side RBAC changes. --ccm-version and
// --csi-version may select older tags; the rules follow the selected tag.
const (
	// ccmNADMappingSince: the cloud provider reads and writes ConfigMap
	// kube-system/harvester-nad-mapping (get, list, watch, create, update).
	ccmNADMappingSince = "v0.2.5"
	// ccmNetworkFlagsSince: --management-network, --node-ip-cidr and
	// --node-exclude-ip-ranges.
	ccmNetworkFlagsSince = "v0.2.7"
)

// DefaultVersions returns the pinned images.
func DefaultVersions() Versions {
	return Versions{
		CloudProvider:       Image{Registry: "docker.io", Repository: "rancher/harvester-cloud-provider", Tag: CloudProviderVersion},
		CSIDriver:           Image{Registry: "docker.io", Repository: "rancher/harvester-csi-driver", Tag: CSIDriverVersion},
		NodeDriverRegistrar: Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-node-driver-registrar", Tag: "v2.16.0"},
		Provisioner:         Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-provisioner", Tag: "v5.3.0"},
		Attacher:            Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-attacher", Tag: "v4.11.0"},
		Resizer:             Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-resizer", Tag: "v2.1.0"},
		Snapshotter:         Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-snapshotter", Tag: "v8.5.0"},
		KubeVIP:             Image{Registry: "docker.io", Repository: "rancher/mirrored-kube-vip-kube-vip-iptables", Tag: KubeVIPVersion},
	}
}
