package sim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

var (
	readVerbs = []string{"get", "list", "watch"}
	anyVerb   = []string{"*"}
)

func rule(group string, resources, verbs []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs, ResourceNames: names}
}

// harvesterClusterRoles are the ClusterRoles every Harvester cluster has for
// guest clusters' cloud provider and CSI driver, with the rules of Harvester
// v1.8.1's chart (deploy/charts/harvester/templates/rbac.yaml), and the role
// Harvester binds to every authenticated user (internal/harvester).
// TestGuestRolesMatchHarvesterChart and TestAuthenticatedRBACMatchesHarvester
// compare them with the harvester module's files.
func harvesterClusterRoles() []*rbacv1.ClusterRole {
	labels := map[string]string{"app.kubernetes.io/name": "harvester", "app.kubernetes.io/part-of": "harvester", "app.kubernetes.io/component": "apiserver", simLabel: "true"}
	return []*rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: hv.CloudProviderRole, Labels: labels},
			Rules: []rbacv1.PolicyRule{
				rule("loadbalancer.harvesterhci.io", []string{"loadbalancers"}, []string{"get", "list", "watch", "update", "create", "delete"}),
				rule("subresources.kubevirt.io", []string{
					"virtualmachines/addvolume", "virtualmachines/removevolume",
					"virtualmachineinstances/addvolume", "virtualmachineinstances/removevolume",
					"virtualmachineinstances/guestosinfo",
				}, []string{"get", "update"}),
				rule("kubevirt.io", []string{"virtualmachines", "virtualmachineinstances"}, readVerbs),
				rule("", []string{"pods"}, readVerbs),
				rule("", []string{"persistentvolumeclaims", "persistentvolumeclaims/status"}, anyVerb),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: hv.CSIDriverRole, Labels: labels},
			Rules: []rbacv1.PolicyRule{
				rule("storage.k8s.io", []string{"storageclasses", "volumeattachments"}, readVerbs),
				rule("harvesterhci.io", []string{"networkfilesystems", "networkfilesystems/status", "volumeremotebackups", "volumeremoterestores"}, anyVerb),
				rule("harvesterhci.io", []string{"settings"}, []string{"get", "list"}, "csi-online-expand-validation", "csi-driver-config"),
				rule("longhorn.io", []string{"volumes", "volumes/status"}, []string{"get", "list"}),
				rule("snapshot.storage.k8s.io", []string{
					"volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses",
					"volumesnapshots/status", "volumesnapshotcontents/status",
				}, anyVerb),
				rule("kubevirt.io", []string{"virtualmachines"}, []string{"patch"}),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: hv.AuthenticatedRole, Labels: map[string]string{simLabel: "true"}},
			Rules:      hv.AuthenticatedRules(),
		},
	}
}

// authenticatedBindings give every authenticated user harvester-authenticated
// and, in harvester-public, the built-in view role, as Harvester does.
func authenticatedBindings() (*rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding) {
	labels := map[string]string{simLabel: "true"}
	everyone := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hv.AuthenticatedGroup}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: hv.AuthenticatedRole, Labels: labels},
		Subjects:   everyone,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hv.AuthenticatedRole},
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: hv.PublicRoleBinding, Namespace: hv.PublicNamespace, Labels: labels},
		Subjects:   everyone,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}
	return crb, rb
}

// installRBAC creates Harvester's ClusterRoles and the bindings for every
// authenticated user (harvester-public must exist).
func installRBAC(ctx context.Context, kube kubernetes.Interface) error {
	for _, role := range harvesterClusterRoles() {
		_, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		if err := createIfMissing(err, "ClusterRole "+role.Name); err != nil {
			return err
		}
	}
	crb, rb := authenticatedBindings()
	_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if err := createIfMissing(err, "ClusterRoleBinding "+crb.Name); err != nil {
		return err
	}
	_, err = kube.RbacV1().RoleBindings(rb.Namespace).Create(ctx, rb, metav1.CreateOptions{})
	return createIfMissing(err, "RoleBinding "+rb.Namespace+"/"+rb.Name)
}

// waitViewAggregated waits until kube-controller-manager has given the
// built-in view role its rules (it aggregates them), so that harvester-public
// is readable from the moment the simulator is ready.
func waitViewAggregated(ctx context.Context, kube kubernetes.Interface) error {
	roles := kube.RbacV1().ClusterRoles()
	k := kubeapi.KindOf[*rbacv1.ClusterRoleList]("ClusterRole", &rbacv1.ClusterRole{}, roles)
	if err := waitFor(ctx, k, "", "view", func(r *rbacv1.ClusterRole) bool { return len(r.Rules) > 0 }); err != nil {
		return fmt.Errorf("wait for the view ClusterRole's aggregated rules: %w", err)
	}
	return nil
}

// simNamespaces are the namespaces a Harvester cluster has besides the
// Kubernetes ones: Harvester's own, its public one and Longhorn's.
func simNamespaces() []*corev1.Namespace {
	var out []*corev1.Namespace
	for _, name := range []string{SystemNamespace, hv.PublicNamespace, LonghornNamespace} {
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{simLabel: "true"}}})
	}
	return out
}
