package sim

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

var (
	readVerbs = []string{"get", "list", "watch"}
	anyVerb   = []string{"*"}
)

// harvesterClusterRoles are the ClusterRoles every Harvester cluster has for
// guest clusters' cloud provider and CSI driver, as Harvester v1.8 ships
// them (its chart's rbac.yaml and the v1.4 upgrade additions; v1.8 added
// patch on virtualmachines to csi-driver). Only the rules matter to the
// simulation: guest credentials are bound to these roles by name.
func harvesterClusterRoles() []*rbacv1.ClusterRole {
	labels := map[string]string{"app.kubernetes.io/name": "harvester", "app.kubernetes.io/part-of": "harvester", "app.kubernetes.io/component": "apiserver", simLabel: "true"}
	return []*rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: harvester.CloudProviderRole, Labels: labels},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"loadbalancer.harvesterhci.io"}, Resources: []string{"loadbalancers"}, Verbs: []string{"get", "list", "watch", "update", "create", "delete"}},
				{APIGroups: []string{"subresources.kubevirt.io"}, Resources: []string{
					"virtualmachines/addvolume", "virtualmachines/removevolume",
					"virtualmachineinstances/addvolume", "virtualmachineinstances/removevolume",
					"virtualmachineinstances/guestosinfo",
				}, Verbs: []string{"get", "update"}},
				{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines", "virtualmachineinstances"}, Verbs: readVerbs},
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: readVerbs},
				{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumeclaims/status"}, Verbs: anyVerb},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: harvester.CSIDriverRole, Labels: labels},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses", "volumeattachments"}, Verbs: readVerbs},
				{APIGroups: []string{"harvesterhci.io"}, Resources: []string{"settings"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{"harvesterhci.io"}, Resources: []string{"networkfilesystems", "networkfilesystems/status"}, Verbs: anyVerb},
				{APIGroups: []string{"longhorn.io"}, Resources: []string{"volumes", "volumes/status"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots", "volumesnapshotcontents"}, Verbs: anyVerb},
				{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"patch"}},
			},
		},
	}
}
