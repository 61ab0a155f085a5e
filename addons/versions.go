// Package addons renders the Harvester cloud provider (CCM) and CSI driver
// manifests that run inside a guest cluster. Every image and version is
// pinned in this file and nowhere else.
package addons

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

// Versions pins every image the add-ons use.
type Versions struct {
	CloudProvider       Image
	CSIDriver           Image
	NodeDriverRegistrar Image
	Provisioner         Image
	Attacher            Image
	Resizer             Image
	Snapshotter         Image
}

// Pinned releases (harvester-cloud-provider and harvester-csi-driver as
// shipped with current RKE2 releases; CSI sidecars from registry.k8s.io).
const (
	CloudProviderVersion = "v0.2.4"
	CSIDriverVersion     = "v0.2.3"
)

// DefaultVersions returns the pinned images.
func DefaultVersions() Versions {
	return Versions{
		CloudProvider:       Image{Registry: "docker.io", Repository: "rancher/harvester-cloud-provider", Tag: CloudProviderVersion},
		CSIDriver:           Image{Registry: "docker.io", Repository: "rancher/harvester-csi-driver", Tag: CSIDriverVersion},
		NodeDriverRegistrar: Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-node-driver-registrar", Tag: "v2.13.0"},
		Provisioner:         Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-provisioner", Tag: "v5.2.0"},
		Attacher:            Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-attacher", Tag: "v4.8.1"},
		Resizer:             Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-resizer", Tag: "v1.13.2"},
		Snapshotter:         Image{Registry: "registry.k8s.io", Repository: "sig-storage/csi-snapshotter", Tag: "v8.2.1"},
	}
}
