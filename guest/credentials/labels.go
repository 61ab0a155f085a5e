// Package credentials is the guest cluster's identity on Harvester: the
// ServiceAccount, its RoleBinding, ClusterRoleBinding and token Secret
// (pure builders in access.go, API calls in harvester.go), and the
// kubeconfig the guest's cloud provider and CSI driver use.
package credentials

import "github.com/harvester-kit/harvester-machine/guest/addons"

// The label of the guest cluster an object was created for; with
// addons.LabelManagedBy it is on every object this tool creates on
// Harvester. Revoke deletes only objects carrying both.
const (
	LabelCluster = "harvester-bootstrap.harvesterhci.io/guest-cluster"
)

func ownLabels(cluster string) map[string]string {
	return map[string]string{addons.LabelManagedBy: addons.ManagedBy, LabelCluster: cluster}
}

// Selector selects the Harvester objects created for one guest cluster.
func Selector(cluster string) string {
	return addons.LabelManagedBy + "=" + addons.ManagedBy + "," + LabelCluster + "=" + cluster
}

// IsOwned reports whether labels mark an object as created by this tool for cluster.
func IsOwned(labels map[string]string, cluster string) bool {
	return labels[addons.LabelManagedBy] == addons.ManagedBy && labels[LabelCluster] == cluster
}
