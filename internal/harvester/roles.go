package harvester

import rbacv1 "k8s.io/api/rbac/v1"

// ClusterRoles that exist on every Harvester cluster, bound to a guest
// cluster's ServiceAccount for its cloud provider and CSI driver.
const (
	CloudProviderRole = "harvesterhci.io:cloudprovider"
	CSIDriverRole     = "harvesterhci.io:csi-driver"
)

// PublicNamespace is the namespace whose built-in view role Harvester v1.8
// binds to every authenticated user (its pkg/data/public.go).
const PublicNamespace = "harvester-public"

// AuthenticatedSettings are the settings every authenticated user may get
// and watch (Harvester's settings.WhiteListedSettings): server-version among
// them, which the guests' CSI driver reads at start-up.
var AuthenticatedSettings = []string{"server-version", "default-storage-class", "harvester-csi-ccm-versions", "default-vm-termination-grace-period-seconds"}

// AuthenticatedRules are the rules of Harvester's ClusterRole
// harvester-authenticated (pkg/data/rbac.go): a credential made
// for Harvester holds them whatever it is bound to.
func AuthenticatedRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"harvesterhci.io"}, Resources: []string{"settings"}, Verbs: []string{"get", "watch"}, ResourceNames: AuthenticatedSettings},
		{APIGroups: []string{"network.harvesterhci.io"}, Resources: []string{"clusternetworks"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "watch"}, ResourceNames: []string{PublicNamespace}},
		{APIGroups: []string{"management.cattle.io"}, Resources: []string{"settings"}, Verbs: []string{"get", "watch"}, ResourceNames: []string{"system-namespaces"}},
	}
}

// KubeVirtAuthenticatedRules are the rules of the two ClusterRoles that
// KubeVirt v1.7's virt-operator binds to system:authenticated on every
// Harvester (pkg/virt-operator/resource/generate/rbac/cluster.go:
// kubevirt.io:default, newDefaultClusterRole; instancetype.kubevirt.io:view,
// newInstancetypeViewClusterRole): a credential made for Harvester holds
// them whatever it is bound to.
func KubeVirtAuthenticatedRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"kubevirt.io"}, Resources: []string{"kubevirts"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"subresources.kubevirt.io"}, Resources: []string{"version", "guestfs"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"instancetype.kubevirt.io"}, Resources: []string{"virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"},
			Verbs: []string{"get", "list", "watch"}},
	}
}
