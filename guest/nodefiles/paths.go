package nodefiles

// Paths inside guest nodes.
const (
	RKE1CloudConfigPath = "/etc/kubernetes/cloud-config"

	RKE2CloudConfigPath = "/var/lib/rancher/rke2/etc/config-files/cloud-provider-config"
	RKE2ConfigDropIn    = "/etc/rancher/rke2/config.yaml.d/" + dropInName
	RKE2ManifestsDir    = "/var/lib/rancher/rke2/server/manifests"
	RKE2HelmConfigFile  = RKE2ManifestsDir + "/harvester-cloud-provider-config.yaml"

	K3sManifestsDir   = "/var/lib/rancher/k3s/server/manifests"
	K3sAddonsManifest = K3sManifestsDir + "/harvester-addons.yaml"
	K3sConfigDropIn   = "/etc/rancher/k3s/config.yaml.d/" + dropInName

	// dropInName sorts late so that it wins over earlier drop-ins.
	dropInName = "90-harvester-cloud-provider.yaml"
)
