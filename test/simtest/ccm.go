package simtest

import (
	"context"
	"fmt"
	"hash/crc32"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// CCMLoadBalancer is the LoadBalancer the cloud provider creates in
// namespace (its cloud-config's) for a Service of type LoadBalancer with no
// cloudprovider.harvesterhci.io annotations: ipam pool, workloadType cluster.
func CCMLoadBalancer(cluster, namespace, svcNamespace, svcName, svcUID string) *lbapi.LoadBalancer {
	return &lbapi.LoadBalancer{
		TypeMeta: metav1.TypeMeta{APIVersion: lbapi.Group + "/" + lbapi.Version, Kind: "LoadBalancer"},
		ObjectMeta: metav1.ObjectMeta{
			Name: ccmLoadBalancerName(cluster, svcNamespace, svcName, svcUID), Namespace: namespace,
			Labels: map[string]string{
				harvester.LabelLBCluster: cluster, harvester.LabelLBServiceNamespace: svcNamespace, harvester.LabelLBServiceName: svcName,
			},
			Annotations: map[string]string{lbapi.AnnCluster: cluster},
		},
		Spec: lbapi.LoadBalancerSpec{IPAM: lbapi.IPAMPool, WorkloadType: lbapi.WorkloadCluster},
	}
}

var gvrLoadBalancer = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "loadbalancers"}

// CCM plays the load-balancer calls of the Harvester cloud provider
// (v0.2.7) for one guest cluster, by its rules and never kinder:
//   - EnsureLoadBalancer (one sync) creates the Service's LoadBalancer,
//     waits for its address and copies the Service's ingress address into
//     status.address: only then, and only when the ingress exists;
//   - GetLoadBalancer treats a LoadBalancer with an empty status.address
//     as absent, so CleanUp deletes nothing then (the LoadBalancer stays on
//     Harvester with its address, as harvester#1460, #5522, #11345 report).
//
// RunServiceController (ccmcontroller.go) calls these as k8s.io/cloud-
// provider's service controller does.
type CCM struct {
	Harvester dynamic.Interface // the cloud-config's credential
	Namespace string            // the cloud-config's namespace
	Cluster   string            // the CCM's --cluster-name
}

func (c *CCM) lbs() dynamic.ResourceInterface {
	return c.Harvester.Resource(gvrLoadBalancer).Namespace(c.Namespace)
}

// Name is the LoadBalancer name of svc.
func (c *CCM) Name(svc *corev1.Service) string {
	return ccmLoadBalancerName(c.Cluster, svc.Namespace, svc.Name, string(svc.UID))
}

// ccmLoadBalancerName is loadBalancerName of harvester-cloud-provider
// v0.2.7 (pkg/cloud-controller-manager/loadbalancer.go), written here from
// that source and not taken from the bootstrap's lbapi, so that tests
// compare the bootstrap's rule with the cloud provider's: a cluster name
// that is not a DNS-1035 label gets an "a" in front; the checksum is crc32
// (IEEE) of the whole "<cluster>-<namespace>-<name>-" plus the UID; the
// name part is cut to 63-8 characters only after that.
func ccmLoadBalancerName(clusterName, serviceNamespace, serviceName, serviceUID string) string {
	if errs := validation.IsDNS1035Label(clusterName); len(errs) != 0 {
		clusterName = "a" + clusterName
	}
	whole := clusterName + "-" + serviceNamespace + "-" + serviceName + "-"
	digest := crc32.Checksum([]byte(whole+serviceUID), crc32.IEEETable)
	const maxName, suffix = 63, 8
	kept := whole
	if len(kept) > maxName-suffix {
		kept = kept[:maxName-suffix]
	}
	return fmt.Sprintf("%s%08x", kept, digest)
}

// get reads the LoadBalancer of svc; nil when there is none.
func (c *CCM) get(ctx context.Context, svc *corev1.Service) (*unstructured.Unstructured, *lbapi.LoadBalancer, error) {
	u, err := c.lbs().Get(ctx, c.Name(svc), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get LoadBalancer %s/%s: %w", c.Namespace, c.Name(svc), err)
	}
	var l lbapi.LoadBalancer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &l); err != nil {
		return nil, nil, err
	}
	return u, &l, nil
}

// GetLoadBalancer reports whether the LoadBalancer of svc exists as the
// cloud provider sees it: only with status.address set.
func (c *CCM) GetLoadBalancer(ctx context.Context, svc *corev1.Service) (*lbapi.LoadBalancer, bool, error) {
	_, l, err := c.get(ctx, svc)
	if err != nil || l == nil {
		return l, false, err
	}
	return l, l.Status.Address != "", nil
}

// EnsureLoadBalancer is one sync of svc: the LoadBalancer is created when
// missing, Harvester allocates its address (waited for, as the CCM polls),
// and the Service's ingress address, when there is one at this moment, is
// copied into status.address. It returns the LoadBalancer as it left it.
func (c *CCM) EnsureLoadBalancer(ctx context.Context, svc *corev1.Service) (*lbapi.LoadBalancer, error) {
	u, l, err := c.get(ctx, svc)
	if err != nil {
		return nil, err
	}
	if u == nil {
		want := CCMLoadBalancer(c.Cluster, c.Namespace, svc.Namespace, svc.Name, string(svc.UID))
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
		if err != nil {
			return nil, err
		}
		delete(m, "status")
		if _, err := c.lbs().Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create LoadBalancer %s/%s: %w", c.Namespace, want.Name, err)
		}
	}
	err = WaitObject(ctx, c.Harvester, gvrLoadBalancer, c.Namespace, c.Name(svc), func(obj *unstructured.Unstructured) bool {
		u, l = obj, nil
		if obj == nil {
			return false
		}
		l = &lbapi.LoadBalancer{}
		return runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, l) == nil && l.Status.AllocatedAddress.IP != ""
	})
	if err != nil {
		return l, fmt.Errorf("LoadBalancer %s/%s got no address: %w", c.Namespace, c.Name(svc), err)
	}
	ingress := IngressIP(svc)
	if ingress == "" || ingress == l.Status.Address {
		return l, nil
	}
	// The object has no status subresource: the CCM updates it whole.
	if err := unstructured.SetNestedField(u.Object, ingress, "status", "address"); err != nil {
		return l, err
	}
	if _, err := c.lbs().Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return l, fmt.Errorf("update LoadBalancer %s/%s: %w", c.Namespace, c.Name(svc), err)
	}
	l.Status.Address = ingress
	return l, nil
}

// IngressIP is the Service's first ingress address, or "".
func IngressIP(svc *corev1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
	}
	return ""
}

// CleanUp is what the service controller does when svc is deleted or no
// longer of type LoadBalancer: EnsureLoadBalancerDeleted only when
// GetLoadBalancer says the LoadBalancer exists. It reports whether it
// deleted it (and waited until Harvester released it).
func (c *CCM) CleanUp(ctx context.Context, svc *corev1.Service) (bool, error) {
	l, exists, err := c.GetLoadBalancer(ctx, svc)
	if err != nil || !exists {
		return false, err
	}
	uid := l.UID
	err = c.lbs().Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete LoadBalancer %s/%s: %w", c.Namespace, l.Name, err)
	}
	return true, WaitObject(ctx, c.Harvester, gvrLoadBalancer, c.Namespace, l.Name, Gone)
}

// DeleteLoadBalancer deletes a LoadBalancer as Harvester's admin (a test's
// cleanup, not the cloud provider) and waits until Harvester released it.
func DeleteLoadBalancer(ctx context.Context, harvester dynamic.Interface, namespace, name string) error {
	lbs := harvester.Resource(gvrLoadBalancer).Namespace(namespace)
	if err := lbs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete LoadBalancer %s/%s: %w", namespace, name, err)
	}
	return WaitObject(ctx, harvester, gvrLoadBalancer, namespace, name, Gone)
}

// LoadBalancerService is a Service of type LoadBalancer (port 80) as a
// test builds it before the API server has it; uid stands in for the one
// the API server would give.
func LoadBalancerService(namespace, name, uid string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(uid)},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

// CloudProviderClient connects to Harvester with a cloud-config (the
// kubeconfig the cloud provider reads) and returns the namespace it uses:
// its current context's, or default.
func CloudProviderClient(cloudConfig []byte) (dynamic.Interface, string, error) {
	cfg, namespace, err := CloudConfigREST(cloudConfig)
	if err != nil {
		return nil, "", err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	return dyn, namespace, err
}

// CloudConfigREST is the connection a cloud-config kubeconfig describes and
// the namespace of its context (default "default"), as the CCM and the CSI
// driver read it.
func CloudConfigREST(cloudConfig []byte) (*rest.Config, string, error) {
	cc, err := clientcmd.Load(cloudConfig)
	if err != nil {
		return nil, "", fmt.Errorf("cloud-config is not a kubeconfig: %w", err)
	}
	namespace := "default"
	if c := cc.Contexts[cc.CurrentContext]; c != nil && c.Namespace != "" {
		namespace = c.Namespace
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*cc, nil).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("cloud-config: %w", err)
	}
	return cfg, namespace, nil
}
