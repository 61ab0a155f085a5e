package sim

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	readVerbs = []string{"get", "list", "watch"}
	allVerbs  = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

// harvesterClusterRoles are the ClusterRoles every Harvester cluster has for
// guest clusters' cloud provider and CSI driver.
func harvesterClusterRoles() []*rbacv1.ClusterRole {
	labels := map[string]string{"app.kubernetes.io/name": "harvester", "app.kubernetes.io/part-of": "harvester", simLabel: "true"}
	return []*rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "harvesterhci.io:cloudprovider", Labels: labels},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"loadbalancer.harvesterhci.io"}, Resources: []string{"loadbalancers"}, Verbs: allVerbs},
				{APIGroups: []string{"loadbalancer.harvesterhci.io"}, Resources: []string{"ippools"}, Verbs: readVerbs},
				{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines", "virtualmachineinstances"}, Verbs: readVerbs},
				{APIGroups: []string{"subresources.kubevirt.io"}, Resources: []string{
					"virtualmachines/addvolume", "virtualmachines/removevolume",
					"virtualmachineinstances/addvolume", "virtualmachineinstances/removevolume",
				}, Verbs: []string{"update"}},
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: readVerbs},
				{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: allVerbs},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "harvesterhci.io:csi-driver", Labels: labels},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses", "volumeattachments"}, Verbs: readVerbs},
				{APIGroups: []string{"harvesterhci.io"}, Resources: []string{"settings"}, Verbs: readVerbs},
				{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"patch"}},
				{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses"}, Verbs: allVerbs},
			},
		},
	}
}
