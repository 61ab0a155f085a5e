package restapi

import (
	"context"
	"fmt"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Interface is every kind of object the driver and guest/credentials
// call, each as a Resource (or a Creator for reviews).
type Interface interface {
	Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList]
	ConfigMaps(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	PersistentVolumeClaims(ns string) Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	Events(ns string) Resource[*corev1.Event, *corev1.EventList]
	ServiceAccounts(ns string) ServiceAccounts
	Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList]
	ResourceQuotas(ns string) Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList]
	Nodes() Resource[*corev1.Node, *corev1.NodeList]
	StorageClasses() Resource[*storagev1.StorageClass, *storagev1.StorageClassList]
	RoleBindings(ns string) Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]
	ClusterRoleBindings() Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList]
	Roles(ns string) Resource[*rbacv1.Role, *rbacv1.RoleList]
	ClusterRoles() Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList]
	SelfSubjectRulesReviews() Creator[*authzv1.SelfSubjectRulesReview]
	SelfSubjectAccessReviews() Creator[*authzv1.SelfSubjectAccessReview]
	VirtualMachines(ns string) Resource[*kubevirtv1.VirtualMachine, *kubevirtv1.VirtualMachineList]
	VirtualMachineInstances(ns string) Resource[*kubevirtv1.VirtualMachineInstance, *kubevirtv1.VirtualMachineInstanceList]
}

// ServiceAccounts is the client of ServiceAccounts, with their token
// subresource.
type ServiceAccounts interface {
	Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	CreateToken(ctx context.Context, name string, req *authnv1.TokenRequest, o metav1.CreateOptions) (*authnv1.TokenRequest, error)
}

// Client is the Interface over REST clients of the scheme's groups.
type Client struct {
	core, rbac, authz, storage, virt rest.Interface
}

var _ Interface = (*Client)(nil)

// New makes a Client for cfg. Its REST clients share one HTTP client
// and one rate limiter (cfg's QPS and Burst), as a clientset's do.
func New(cfg *rest.Config) (*Client, error) {
	c := rest.CopyConfig(cfg)
	if c.RateLimiter == nil && c.QPS > 0 {
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("HTTP client: %w", err)
	}
	client := func(gv schema.GroupVersion) (rest.Interface, error) {
		gc := rest.CopyConfig(c)
		gc.GroupVersion = &gv
		gc.APIPath = "/apis"
		if gv.Group == "" {
			gc.APIPath = "/api"
		}
		gc.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
		if gc.UserAgent == "" {
			gc.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rc, err := rest.RESTClientForConfigAndClient(gc, httpClient)
		if err != nil {
			return nil, fmt.Errorf("REST client of %s: %w", gv, err)
		}
		return rc, nil
	}
	out := &Client{}
	for _, g := range []struct {
		gv schema.GroupVersion
		to *rest.Interface
	}{
		{corev1.SchemeGroupVersion, &out.core},
		{rbacv1.SchemeGroupVersion, &out.rbac},
		{authzv1.SchemeGroupVersion, &out.authz},
		{storagev1.SchemeGroupVersion, &out.storage},
		{kubevirtv1.SchemeGroupVersion, &out.virt},
	} {
		if *g.to, err = client(g.gv); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newOf returns a constructor of empty *T.
func newOf[T any]() func() *T { return func() *T { return new(T) } }

func (c *Client) Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList] {
	return newResource(c.core, "secrets", ns, newOf[corev1.Secret](), newOf[corev1.SecretList]())
}

func (c *Client) ConfigMaps(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return newResource(c.core, "configmaps", ns, newOf[corev1.ConfigMap](), newOf[corev1.ConfigMapList]())
}

func (c *Client) PersistentVolumeClaims(ns string) Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return newResource(c.core, "persistentvolumeclaims", ns, newOf[corev1.PersistentVolumeClaim](), newOf[corev1.PersistentVolumeClaimList]())
}

func (c *Client) Events(ns string) Resource[*corev1.Event, *corev1.EventList] {
	return newResource(c.core, "events", ns, newOf[corev1.Event](), newOf[corev1.EventList]())
}

func (c *Client) ServiceAccounts(ns string) ServiceAccounts {
	return serviceAccounts{newResource(c.core, "serviceaccounts", ns, newOf[corev1.ServiceAccount](), newOf[corev1.ServiceAccountList]())}
}

func (c *Client) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return newResource(c.core, "namespaces", "", newOf[corev1.Namespace](), newOf[corev1.NamespaceList]())
}

func (c *Client) ResourceQuotas(ns string) Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return newResource(c.core, "resourcequotas", ns, newOf[corev1.ResourceQuota](), newOf[corev1.ResourceQuotaList]())
}

func (c *Client) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return newResource(c.core, "nodes", "", newOf[corev1.Node](), newOf[corev1.NodeList]())
}

func (c *Client) StorageClasses() Resource[*storagev1.StorageClass, *storagev1.StorageClassList] {
	return newResource(c.storage, "storageclasses", "", newOf[storagev1.StorageClass](), newOf[storagev1.StorageClassList]())
}

func (c *Client) RoleBindings(ns string) Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return newResource(c.rbac, "rolebindings", ns, newOf[rbacv1.RoleBinding](), newOf[rbacv1.RoleBindingList]())
}

func (c *Client) ClusterRoleBindings() Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return newResource(c.rbac, "clusterrolebindings", "", newOf[rbacv1.ClusterRoleBinding](), newOf[rbacv1.ClusterRoleBindingList]())
}

func (c *Client) Roles(ns string) Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return newResource(c.rbac, "roles", ns, newOf[rbacv1.Role](), newOf[rbacv1.RoleList]())
}

func (c *Client) ClusterRoles() Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return newResource(c.rbac, "clusterroles", "", newOf[rbacv1.ClusterRole](), newOf[rbacv1.ClusterRoleList]())
}

func (c *Client) SelfSubjectRulesReviews() Creator[*authzv1.SelfSubjectRulesReview] {
	return newResource(c.authz, "selfsubjectrulesreviews", "", newOf[authzv1.SelfSubjectRulesReview](), newOf[authzv1.SelfSubjectRulesReview]())
}

func (c *Client) SelfSubjectAccessReviews() Creator[*authzv1.SelfSubjectAccessReview] {
	return newResource(c.authz, "selfsubjectaccessreviews", "", newOf[authzv1.SelfSubjectAccessReview](), newOf[authzv1.SelfSubjectAccessReview]())
}

func (c *Client) VirtualMachines(ns string) Resource[*kubevirtv1.VirtualMachine, *kubevirtv1.VirtualMachineList] {
	return newResource(c.virt, "virtualmachines", ns, newOf[kubevirtv1.VirtualMachine](), newOf[kubevirtv1.VirtualMachineList]())
}

func (c *Client) VirtualMachineInstances(ns string) Resource[*kubevirtv1.VirtualMachineInstance, *kubevirtv1.VirtualMachineInstanceList] {
	return newResource(c.virt, "virtualmachineinstances", ns, newOf[kubevirtv1.VirtualMachineInstance](), newOf[kubevirtv1.VirtualMachineInstanceList]())
}

// serviceAccounts adds the token subresource to the ServiceAccounts'
// resource.
type serviceAccounts struct {
	*resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
}

func (s serviceAccounts) CreateToken(ctx context.Context, name string, req *authnv1.TokenRequest, o metav1.CreateOptions) (*authnv1.TokenRequest, error) {
	out := &authnv1.TokenRequest{}
	err := s.req("POST").Name(name).SubResource("token").VersionedParams(&o, parameterCodec).Body(req).Do(ctx).Into(out)
	return out, err
}
