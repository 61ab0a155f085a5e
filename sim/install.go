package sim

import (
	"context"
	"fmt"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// gvrOf maps a served kind to its resource, from the CRD table.
func gvrOf(apiVersion, kind string) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, s := range simCRDs {
		if s.group == gv.Group && s.version == gv.Version && s.kind == kind {
			return gv.WithResource(s.plural), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no simulated resource for %s %s", apiVersion, kind)
}

func createIfMissing(err error, what string) error {
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s: %w", what, err)
	}
	return nil
}

// installCore creates the namespaces, RBAC, hosts and storage class.
func installCore(ctx context.Context, kube kubernetes.Interface, hosts, zones int) error {
	for _, ns := range simNamespaces() {
		_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err := createIfMissing(err, "namespace "+ns.Name); err != nil {
			return err
		}
	}
	if err := installRBAC(ctx, kube); err != nil {
		return err
	}
	for _, node := range buildHosts(hosts, zones) {
		status := node.Status
		created, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create host %s: %w", node.Name, err)
		}
		// kube-controller-manager's node lifecycle controller may write
		// the new Node meanwhile: retry on a fresh copy.
		var updated *corev1.Node
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			created.Status = status
			var uerr error
			updated, uerr = kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			if apierrors.IsConflict(uerr) {
				if fresh, gerr := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); gerr == nil {
					created = fresh
				}
			}
			return uerr
		})
		if err != nil {
			return fmt.Errorf("set status of host %s: %w", node.Name, err)
		}
		if err := untaintReady(ctx, kube, updated); err != nil {
			return err
		}
	}
	if err := installPoolInUsePolicy(ctx, kube); err != nil {
		return err
	}
	_, err := kube.StorageV1().StorageClasses().Create(ctx, buildDefaultStorageClass(), metav1.CreateOptions{})
	return createIfMissing(err, "StorageClass "+DefaultStorageName)
}

// installHarvesterFixtures creates the image, network, key pair and setting.
func installHarvesterFixtures(ctx context.Context, dyn dynamic.Interface, publicKey string) error {
	objs, err := buildHarvesterFixtures(publicKey)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		gvr, err := gvrOf(obj.GetAPIVersion(), obj.GetKind())
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(gvr).Namespace(ns)
		}
		_, err = ri.Create(ctx, obj, metav1.CreateOptions{})
		if err := createIfMissing(err, obj.GetKind()+" "+obj.GetName()); err != nil {
			return err
		}
	}
	return nil
}

// waitFixturesReady waits until the simulated Harvester controllers have
// imported the image and validated the key pair.
func waitFixturesReady(ctx context.Context, dyn dynamic.Interface) error {
	checks := []struct {
		kind, name string
		condition  harvesterv1.Condition
	}{
		{"VirtualMachineImage", FixtureImage, harvesterv1.Condition{Type: "Imported"}},
		{"KeyPair", FixtureKeyPair, harvesterv1.Condition{Type: "validated"}},
	}
	for _, c := range checks {
		gvr, err := gvrOf("harvesterhci.io/v1beta1", c.kind)
		if err != nil {
			return err
		}
		ri := dyn.Resource(gvr).Namespace(FixtureNamespace)
		k := kubeapi.KindOf[*unstructured.UnstructuredList](c.kind, &unstructured.Unstructured{}, ri)
		err = waitFor(ctx, k, FixtureNamespace, c.name, func(u *unstructured.Unstructured) bool { return kubeapi.ConditionTrue(u, string(c.condition.Type)) })
		if err != nil {
			return fmt.Errorf("wait for %s %s/%s to be %s: %w", c.kind, FixtureNamespace, c.name, c.condition.Type, err)
		}
	}
	return nil
}

// untaintReady takes node.kubernetes.io/not-ready:NoSchedule off a host
// created Ready: the API server's NodeTaint admission gives it to every
// new Node, and kube-controller-manager's node lifecycle controller takes
// it off once the node reports Ready. That controller runs in the
// simulator too, but only checks nodes every --node-monitor-period; doing
// its step at install lets VMs be placed at once.
func untaintReady(ctx context.Context, kube kubernetes.Interface, node *corev1.Node) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kept := node.Spec.Taints[:0:0]
		for _, t := range node.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		_, err := kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) { // the node lifecycle controller wrote it meanwhile
			if fresh, gerr := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); gerr == nil {
				node = fresh
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("remove the not-ready taint of Ready host %s: %w", node.Name, err)
	}
	return nil
}
