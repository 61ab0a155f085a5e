package harvester

// ClusterRoles that exist on every Harvester cluster, bound to a guest
// cluster's ServiceAccount for its cloud provider and CSI driver.
const (
	CloudProviderRole = "harvesterhci.io:cloudprovider"
	CSIDriverRole     = "harvesterhci.io:csi-driver"
)
