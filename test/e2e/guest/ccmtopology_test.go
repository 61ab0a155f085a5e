package guest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// TestCCMResyncsTopologyAfterMigration: a machine of a K3s pool live-migrates
// to a host of the other zone (the simulator's hosts: harvester-node-0 and
// -2 in sim-zone-a, harvester-node-1 in sim-zone-b; every other host
// cordoned so the scheduler can only pick that one). Harvester moves the
// VMI's topology annotations; the cloud provider's VMI controller (stand-in
// of v0.2.7, with the guest's cloud-config) sees the completed migration,
// puts node.cloudprovider.kubernetes.io/uninitialized=true:PreferNoSchedule
// on the guest node, and the cloud node controller initialises it again:
// the node's zone labels (GA and beta) follow the VM, the taint goes.
func TestCCMResyncsTopologyAfterMigration(t *testing.T) {
	const cluster = "ccm-topo"
	const zoneKey, betaZoneKey, taintKey = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", "node.cloudprovider.kubernetes.io/uninitialized"
	_, machines := createPool(t, cluster, 1, "--harvester-cloud-provider=k3s")
	node := machines[0]
	guest, _ := guestClients(t, cluster)
	checkNodesJoined(t, guest, machines)

	hv, namespace := harvesterAs(t, guestCloudConfig(t, guest))
	ccmCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	logf := func(format string, a ...any) {
		if ccmCtx.Err() == nil {
			t.Logf("cloud provider: "+format, a...)
		}
	}
	// Errors requeue, as in the real controllers (a VMI of another test's
	// VM may have no guest node here, which is no error): logged only.
	onErr := func(err error) { logf("%v", err) }
	nodeToVM := &sync.Map{}
	nc := &simtest.CloudNodeController{Guest: guest, Harvester: hv, Namespace: namespace, NodeToVM: nodeToVM, Log: logf, OnError: onErr}
	if err := nc.Run(ccmCtx); err != nil {
		t.Fatal(err)
	}
	tc := &simtest.TopologyController{Harvester: hv, Namespace: namespace, Cluster: cluster, Guest: guest, NodeToVM: nodeToVM, Log: logf, OnError: onErr}
	if err := tc.Run(ccmCtx); err != nil {
		t.Fatal(err)
	}

	vmi, err := env.virt.KubevirtV1().VirtualMachineInstances(vmNamespace).Get(testContext(t), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	source := vmi.Status.NodeName
	hosts, err := env.kube.CoreV1().Nodes().List(testContext(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{}
	for _, h := range hosts.Items {
		zoneOf[h.Name] = h.Labels[zoneKey]
	}
	poll(t, "the guest node initialised with the zone of "+source, func(ctx context.Context) (bool, string) {
		n, err := guest.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Labels[zoneKey] == zoneOf[source] && !hasTaintKey(n, taintKey), fmt.Sprintf("labels %v taints %v", n.Labels, n.Spec.Taints)
	})
	before, err := guest.CoreV1().Nodes().Get(testContext(t), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target := ""
	for _, h := range hosts.Items {
		if zoneOf[h.Name] != zoneOf[source] && target == "" {
			target = h.Name
		}
	}
	if target == "" {
		t.Fatalf("no host outside zone %s: %v", zoneOf[source], zoneOf)
	}
	for _, h := range hosts.Items {
		if h.Name != target && h.Name != source {
			cordonHost(t, h.Name)
		}
	}

	// Watch the guest node from here: the PreferNoSchedule taint must show.
	w, err := guest.CoreV1().Nodes().Watch(testContext(t), metav1.ListOptions{FieldSelector: "metadata.name=" + node, ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var sawTaint atomic.Bool
	go func() {
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type == watch.Modified && slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool {
				return tn.Key == taintKey && tn.Value == "true" && tn.Effect == corev1.TaintEffectPreferNoSchedule
			}) {
				sawTaint.Store(true)
			}
		}
	}()

	mig := &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmNamespace, Name: node + "-to-" + target},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: node},
	}
	if _, err := env.virt.KubevirtV1().VirtualMachineInstanceMigrations(vmNamespace).Create(testContext(t), mig, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.virt.KubevirtV1().VirtualMachineInstanceMigrations(vmNamespace).Delete(context.Background(), mig.Name, metav1.DeleteOptions{})
	})
	poll(t, "the migration to "+target+" completed", func(ctx context.Context) (bool, string) {
		v, err := env.virt.KubevirtV1().VirtualMachineInstances(vmNamespace).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ms := v.Status.MigrationState
		return ms != nil && ms.Completed && v.Status.NodeName == target && v.Annotations[zoneKey] == zoneOf[target],
			fmt.Sprintf("node %s migrationState %+v annotations %v", v.Status.NodeName, ms, v.Annotations)
	})
	poll(t, "the guest node re-initialised with zone "+zoneOf[target], func(ctx context.Context) (bool, string) {
		n, err := guest.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Labels[zoneKey] == zoneOf[target] && n.Labels[betaZoneKey] == zoneOf[target] && !hasTaintKey(n, taintKey) && sawTaint.Load(),
			fmt.Sprintf("labels %v taints %v, PreferNoSchedule taint seen %v", n.Labels, n.Spec.Taints, sawTaint.Load())
	})
	after, err := guest.CoreV1().Nodes().Get(testContext(t), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Spec.ProviderID != before.Spec.ProviderID || !nodeReady(after) {
		t.Errorf("after the re-initialisation providerID %q (before %q), Ready %v", after.Spec.ProviderID, before.Spec.ProviderID, nodeReady(after))
	}
}

func hasTaintKey(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// cordonHost marks a Harvester host unschedulable until the test ends.
func cordonHost(t *testing.T, name string) {
	t.Helper()
	set := func(v bool) error {
		b, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": v}})
		_, err := env.kube.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, b, metav1.PatchOptions{})
		return err
	}
	if err := set(true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(false); err != nil {
			t.Errorf("uncordon %s: %v", name, err)
		}
	})
}
