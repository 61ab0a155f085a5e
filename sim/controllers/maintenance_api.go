package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// EnableMaintenance is Harvester's node action enableMaintenanceMode: it
// checks maintenancePossible (drainhelper.DrainPossible) and annotates the
// host drain-requested (and drain-forced with force); the nodedrain
// controller does the rest. It returns the host's resourceVersion after
// the request.
func EnableMaintenance(ctx context.Context, kube kubernetes.Interface, host string, force bool) (string, error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("enable maintenance of %s: list hosts: %w", host, err)
	}
	var node *corev1.Node
	for i := range nodes.Items {
		if nodes.Items[i].Name == host {
			node = &nodes.Items[i]
		}
	}
	if node == nil {
		names := make([]string, 0, len(nodes.Items))
		for _, n := range nodes.Items {
			names = append(names, n.Name)
		}
		return "", fmt.Errorf("enable maintenance: no host %q (hosts: %v)", host, names)
	}
	if err := drainPossible(node, nodes.Items); err != nil {
		return "", fmt.Errorf("enable maintenance of %s: %w", host, err)
	}
	var rv string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := kube.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[hv.AnnDrainRequested] = "true"
		if force {
			n.Annotations[hv.AnnDrainForced] = "true"
		}
		upd, err := kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err == nil {
			rv = upd.ResourceVersion
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("enable maintenance of %s: %w", host, err)
	}
	return rv, nil
}

// DisableMaintenance is Harvester's node action disableMaintenanceMode:
// uncordon, remove the kubevirt.io/drain taint and the maintenance
// annotations, then start the VMs shut down with strategy
// ShutdownAndRestartAfterDisable for this host. VMs maintenance stopped
// otherwise (force, eviction) are not started again, as in Harvester.
func DisableMaintenance(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := kube.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = false
		for i, t := range n.Spec.Taints {
			if t.Key == hv.TaintKubeVirtDrain {
				n.Spec.Taints = append(n.Spec.Taints[:i], n.Spec.Taints[i+1:]...)
				break
			}
		}
		delete(n.Annotations, hv.AnnDrainRequested)
		delete(n.Annotations, hv.AnnDrainForced)
		delete(n.Annotations, hv.AnnMaintainStatus)
		_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("disable maintenance of %s: %w", host, err)
	}
	if err := startAfterDisable(ctx, kube, dyn, host); err != nil {
		return fmt.Errorf("disable maintenance of %s: %w", host, err)
	}
	return nil
}

// StopVM is `virtctl stop` for the simulator's VMs and Harvester's
// findAndStopVM: spec.runStrategy Halted.
func StopVM(ctx context.Context, dyn dynamic.Interface, ns, name string) error {
	vms := dyn.Resource(gvrVM).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := vms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if rs, _, _ := unstructured.NestedString(cur.Object, "spec", "runStrategy"); rs == string(kubevirtv1.RunStrategyHalted) {
			return nil
		}
		_ = unstructured.SetNestedField(cur.Object, string(kubevirtv1.RunStrategyHalted), "spec", "runStrategy")
		unstructured.RemoveNestedField(cur.Object, "spec", "running")
		_, err = vms.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("stop vm %s/%s: %w", ns, name, err)
	}
	return nil
}
