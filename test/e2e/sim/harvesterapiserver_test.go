package sim_test

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHarvesterAPIServerRunsFromBin: Harvester's own API server runs as a
// child of the simulator from bin/, seeing a Pod's ServiceAccount files
// with namespace harvester-system; it holds its controllers' Lease
// kube-system/harvester-controllers (pkg/controller/master/setup.go) and
// its node controllers have put their finalizer on every host (wrangler's
// OnRemove, pkg/controller/master/node/node_remove_controller.go).
func TestHarvesterAPIServerRunsFromBin(t *testing.T) {
	checkHarvesterPod(t, "harvester")
	checkLeads(t, time.Now().Add(-time.Minute), "harvester", "kube-system", "harvester-controllers")
	nodes, err := kube.CoreV1().Nodes().List(testContext(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if !slices.Contains(n.Finalizers, "wrangler.cattle.io/node-remove-controller") {
			t.Errorf("host %s finalizers %v: want Harvester's node-remove-controller's", n.Name, n.Finalizers)
		}
	}
}
