package hv

import rbacv1 "k8s.io/api/rbac/v1"

// ClusterRoles of Harvester's chart that a guest cluster's cloud provider
// and CSI driver are bound to (deploy/charts/harvester/templates/rbac.yaml).
const (
	CloudProviderRole = "harvesterhci.io:cloudprovider"
	CSIDriverRole     = "harvesterhci.io:csi-driver"
)

// What Harvester grants every authenticated user (pkg/data/rbac.go,
// addAuthenticatedRoles; pkg/data/public.go).
const (
	AuthenticatedRole  = "harvester-authenticated"
	AuthenticatedGroup = "system:authenticated"
	PublicNamespace    = "harvester-public"
	PublicRoleBinding  = "harvester-public"
)

// AuthenticatedSettings is settings.WhiteListedSettings
// (pkg/settings/settings.go).
var AuthenticatedSettings = []string{"server-version", "default-storage-class", "harvester-csi-ccm-versions", "default-vm-termination-grace-period-seconds"}

// AuthenticatedRules are the rules of the ClusterRole AuthenticatedRole.
func AuthenticatedRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{Verbs: []string{"get", "watch"}, APIGroups: []string{"harvesterhci.io"}, Resources: []string{"settings"}, ResourceNames: AuthenticatedSettings},
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"network.harvesterhci.io"}, Resources: []string{"clusternetworks"}},
		{Verbs: []string{"get", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{PublicNamespace}},
		{Verbs: []string{"get", "watch"}, APIGroups: []string{"management.cattle.io"}, Resources: []string{"settings"}, ResourceNames: []string{"system-namespaces"}},
	}
}
