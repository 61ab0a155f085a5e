// Package restapifake serves a restapi.Interface from client-go's and
// KubeVirt's fake clientsets, for unit tests of logic and error branches.
package restapifake

import (
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// Clients is a restapi.Interface over Kube and Virt (either may be nil
// when the test calls none of its kinds).
type Clients struct {
	Kube kubernetes.Interface
	Virt kubevirt.Interface
}

var _ restapi.Interface = Clients{}

func (c Clients) Secrets(ns string) restapi.Resource[*corev1.Secret, *corev1.SecretList] {
	return withInitialEvents(c.Kube.CoreV1().Secrets(ns), func() *corev1.Secret { return &corev1.Secret{} })
}

func (c Clients) ConfigMaps(ns string) restapi.Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return withInitialEvents(c.Kube.CoreV1().ConfigMaps(ns), func() *corev1.ConfigMap { return &corev1.ConfigMap{} })
}

func (c Clients) PersistentVolumeClaims(ns string) restapi.Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return withInitialEvents(c.Kube.CoreV1().PersistentVolumeClaims(ns), func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} })
}

func (c Clients) Events(ns string) restapi.Resource[*corev1.Event, *corev1.EventList] {
	return c.Kube.CoreV1().Events(ns)
}

func (c Clients) ServiceAccounts(ns string) restapi.ServiceAccounts {
	return c.Kube.CoreV1().ServiceAccounts(ns)
}

func (c Clients) Namespaces() restapi.Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return c.Kube.CoreV1().Namespaces()
}

func (c Clients) ResourceQuotas(ns string) restapi.Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return c.Kube.CoreV1().ResourceQuotas(ns)
}

func (c Clients) Nodes() restapi.Resource[*corev1.Node, *corev1.NodeList] {
	return c.Kube.CoreV1().Nodes()
}

func (c Clients) StorageClasses() restapi.Resource[*storagev1.StorageClass, *storagev1.StorageClassList] {
	return c.Kube.StorageV1().StorageClasses()
}

func (c Clients) RoleBindings(ns string) restapi.Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return c.Kube.RbacV1().RoleBindings(ns)
}

func (c Clients) ClusterRoleBindings() restapi.Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return c.Kube.RbacV1().ClusterRoleBindings()
}

func (c Clients) Roles(ns string) restapi.Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return c.Kube.RbacV1().Roles(ns)
}

func (c Clients) ClusterRoles() restapi.Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return c.Kube.RbacV1().ClusterRoles()
}

func (c Clients) SelfSubjectRulesReviews() restapi.Creator[*authzv1.SelfSubjectRulesReview] {
	return c.Kube.AuthorizationV1().SelfSubjectRulesReviews()
}

func (c Clients) SelfSubjectAccessReviews() restapi.Creator[*authzv1.SelfSubjectAccessReview] {
	return c.Kube.AuthorizationV1().SelfSubjectAccessReviews()
}

func (c Clients) VirtualMachines(ns string) restapi.Resource[*kubevirtv1.VirtualMachine, *kubevirtv1.VirtualMachineList] {
	return withInitialEvents(c.Virt.KubevirtV1().VirtualMachines(ns), func() *kubevirtv1.VirtualMachine { return &kubevirtv1.VirtualMachine{} })
}

func (c Clients) VirtualMachineInstances(ns string) restapi.Resource[*kubevirtv1.VirtualMachineInstance, *kubevirtv1.VirtualMachineInstanceList] {
	return withInitialEvents(c.Virt.KubevirtV1().VirtualMachineInstances(ns), func() *kubevirtv1.VirtualMachineInstance { return &kubevirtv1.VirtualMachineInstance{} })
}
