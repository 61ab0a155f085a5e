package sim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// What Rancher's provisioning of Harvester's own cluster leaves, as far as
// Harvester's upgrade validator reads it (pkg/webhook/resources/upgrade
// validator.go checkResources): the CAPI Cluster fleet-local/local,
// Provisioned, and one Machine per host, Running, whose nodeRef is the
// host; each host names its Machine (hv.AnnMachine).
const (
	// FleetLocalNamespace is util.FleetLocalNamespaceName.
	FleetLocalNamespace = "fleet-local"
	localClusterName    = "local"
)

var (
	capiClusterGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	capiMachineGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}
)

// machineName is host's Machine: Rancher names custom machines
// custom-<hash>; the simulator's keep the host's name, so the planner's
// order by Machine name is the hosts' (hv.UpgradeOrder).
func machineName(host string) string { return "custom-" + host }

// buildRancherFixtures are the Cluster and the hosts' Machines, status
// included (written through the status subresource).
func buildRancherFixtures(hosts []string) []*unstructured.Unstructured {
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": FleetLocalNamespace, "labels": map[string]any{simLabel: "true"}}
	}
	out := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "metadata": meta(localClusterName),
		"spec": map[string]any{}, "status": map[string]any{"phase": "Provisioned"},
	}}}
	for _, h := range hosts {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "metadata": meta(machineName(h)),
			"spec": map[string]any{"clusterName": localClusterName},
			"status": map[string]any{"phase": "Running",
				"nodeRef": map[string]any{"apiVersion": "v1", "kind": "Node", "name": h}},
		}})
	}
	return out
}

// installRancherFixtures creates the namespace fleet-local, the Cluster
// and the Machines, then their status.
func installRancherFixtures(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, hosts []string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FleetLocalNamespace, Labels: map[string]string{simLabel: "true"}}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err := createIfMissing(err, "namespace "+FleetLocalNamespace); err != nil {
		return err
	}
	for _, obj := range buildRancherFixtures(hosts) {
		gvr := capiMachineGVR
		if obj.GetKind() == "Cluster" {
			gvr = capiClusterGVR
		}
		ri := dyn.Resource(gvr).Namespace(FleetLocalNamespace)
		status := obj.Object["status"]
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s %s/%s: %w", obj.GetKind(), FleetLocalNamespace, obj.GetName(), err)
		}
		created.Object["status"] = status
		if _, err := ri.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of %s %s/%s: %w", obj.GetKind(), FleetLocalNamespace, obj.GetName(), err)
		}
	}
	return nil
}
