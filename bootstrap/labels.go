// Package bootstrap builds everything a guest cluster on Harvester needs:
// the Harvester-side ServiceAccount, RBAC and token, the cloud-provider
// kubeconfig, cluster configuration for RKE1/RKE2/K3s, load-balancer
// helpers, VM affinity and the Rancher NodeDriver manifest. Pure builders
// live beside a thin API layer (harvester.go, guest.go).
package bootstrap

import (
	"github.com/harvester-kit/harvester-machine/addons"
	"github.com/harvester-kit/harvester-machine/internal/guestconfig"
)

// Labels on every object this tool creates on Harvester. Revoke deletes
// only objects carrying both.
const (
	LabelManagedBy = addons.LabelManagedBy
	ManagedBy      = addons.ManagedBy
	LabelCluster   = "harvester-bootstrap.harvesterhci.io/guest-cluster"

	// ClusterRoles that exist on every Harvester cluster.
	CloudProviderRole = "harvesterhci.io:cloudprovider"
	CSIDriverRole     = "harvesterhci.io:csi-driver"

	// Paths inside guest nodes (internal/guestconfig).
	RKE1CloudConfigPath = guestconfig.RKE1CloudConfigPath
	RKE2CloudConfigPath = guestconfig.RKE2CloudConfigPath
	K3sManifestsDir     = guestconfig.K3sManifestsDir
)

func ownLabels(cluster string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelCluster: cluster}
}

// Selector selects the Harvester objects created for one guest cluster.
func Selector(cluster string) string {
	return LabelManagedBy + "=" + ManagedBy + "," + LabelCluster + "=" + cluster
}

// IsOwned reports whether labels mark an object as created by this tool for cluster.
func IsOwned(labels map[string]string, cluster string) bool {
	return labels[LabelManagedBy] == ManagedBy && labels[LabelCluster] == cluster
}
