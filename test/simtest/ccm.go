package simtest

import (
	"context"
	"fmt"
	"hash/crc32"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// CCMLoadBalancerName is the name the Harvester cloud provider gives the
// LoadBalancer of a guest Service: "<cluster>-<ns>-<name>-" cut to 55
// characters plus 8 hex digits of crc32(prefix + Service UID), with an "a"
// in front when the cluster name is not a DNS-1035 label.
func CCMLoadBalancerName(cluster, svcNamespace, svcName, svcUID string) string {
	prefix := cluster + "-" + svcNamespace + "-" + svcName + "-"
	if len(validation.IsDNS1035Label(cluster)) > 0 {
		prefix = "a" + prefix
	}
	if len(prefix) > 55 {
		prefix = prefix[:55]
	}
	return prefix + fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(prefix+svcUID)))
}

// CCMLoadBalancer is the LoadBalancer the cloud provider creates in
// namespace (its cloud-config's) for a Service of type LoadBalancer with no
// cloudprovider.harvesterhci.io annotations: ipam pool, workloadType cluster.
func CCMLoadBalancer(cluster, namespace, svcNamespace, svcName, svcUID string) *lbapi.LoadBalancer {
	return &lbapi.LoadBalancer{
		TypeMeta: metav1.TypeMeta{APIVersion: lbapi.Group + "/" + lbapi.Version, Kind: "LoadBalancer"},
		ObjectMeta: metav1.ObjectMeta{
			Name: CCMLoadBalancerName(cluster, svcNamespace, svcName, svcUID), Namespace: namespace,
			Labels: map[string]string{
				harvester.LabelLBCluster: cluster, harvester.LabelLBServiceNamespace: svcNamespace, harvester.LabelLBServiceName: svcName,
			},
			Annotations: map[string]string{lbapi.AnnCluster: cluster},
		},
		Spec: lbapi.LoadBalancerSpec{IPAM: lbapi.IPAMPool, WorkloadType: lbapi.WorkloadCluster},
	}
}

var gvrLoadBalancer = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "loadbalancers"}

// CCMCreate does what the cloud provider does for a new LoadBalancer
// Service, with its Harvester credential: it creates l, waits until
// Harvester allocated an address (polling, as the CCM does) and writes that
// address into status.address (the object has no status subresource).
func CCMCreate(ctx context.Context, harvester dynamic.Interface, l *lbapi.LoadBalancer) (lbapi.AllocatedAddress, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		return lbapi.AllocatedAddress{}, err
	}
	delete(m, "status")
	lbs := harvester.Resource(gvrLoadBalancer).Namespace(l.Namespace)
	if _, err := lbs.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
		return lbapi.AllocatedAddress{}, fmt.Errorf("create LoadBalancer %s/%s: %w", l.Namespace, l.Name, err)
	}
	var got lbapi.LoadBalancer
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		u, err := lbs.Get(ctx, l.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = lbapi.LoadBalancer{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got) != nil || got.Status.AllocatedAddress.IP == "" {
			return false, nil
		}
		if got.Status.Address == got.Status.AllocatedAddress.IP {
			return true, nil
		}
		_ = unstructured.SetNestedField(u.Object, got.Status.AllocatedAddress.IP, "status", "address")
		_, err = lbs.Update(ctx, u, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		return got.Status.AllocatedAddress, fmt.Errorf("LoadBalancer %s/%s got no address: %w (status %+v)", l.Namespace, l.Name, err, got.Status)
	}
	return got.Status.AllocatedAddress, nil
}

// CCMDelete deletes a LoadBalancer as the cloud provider does when its
// Service goes, and waits until Harvester has released it.
func CCMDelete(ctx context.Context, harvester dynamic.Interface, namespace, name string) error {
	lbs := harvester.Resource(gvrLoadBalancer).Namespace(namespace)
	if err := lbs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete LoadBalancer %s/%s: %w", namespace, name, err)
	}
	return WaitObject(ctx, harvester, gvrLoadBalancer, namespace, name, Gone)
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
