package simctl

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var gvrUpgrade = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "upgrades"}

// Harvester v1.8's names (pkg/util/constants.go, the upgrade controller's
// job_controller.go), spelled here from its source.
const (
	labelUpgradeState   = "harvesterhci.io/upgradeState"
	labelUpgradeCleanup = "harvesterhci.io/upgradeCleanup"
)

// TestUpgradeObjectKeepsDrainTaint: `harvester-sim upgrade` runs under an
// Upgrade in harvester-system labelled upgradeState UpgradingNodes, so
// Harvester's node-down controller (node_down_controller.go checkNodeReady:
// isOnUpgrade) leaves a Ready host's kubevirt.io/drain taint alone while
// the host pre-drains and its VM live-migrates away: the taint goes only
// with the post-drain, when the Upgrade records the host Post-draining or
// Succeeded, never while Pre-draining or Pre-drained. The Upgrade ends
// labelled Succeeded with its cleanup done and Completed True. Afterwards,
// with no upgrade under way, the same taint on the Ready host is taken off
// (checkNodeReady's Ready case): what the Upgrade held off.
func TestUpgradeObjectKeepsDrainTaint(t *testing.T) {
	ns := testNamespace(t)
	aloneOnHosts(t, ns)
	createVM(t, ns, "ut-0", vmOpts{userData: agentCloudConfig})
	host := waitVMI(t, ns, "ut-0", "running with an address, live-migratable", migratable).Status.NodeName

	ctx, stop := context.WithCancel(testContext(t))
	var mu sync.Mutex
	var untainted []string // the host's state in the Upgrade when its taint went
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		w, err := env.kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", host).String()})
		if err != nil {
			t.Errorf("watch %s: %v", host, err)
			return
		}
		defer w.Stop()
		tainted := false
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			now := slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == harvester.TaintKubeVirtDrain })
			if tainted && !now {
				mu.Lock()
				untainted = append(untainted, hostUpgradeState(ctx, t, host))
				mu.Unlock()
			}
			tainted = now
		}
	}()
	out, err := simCLI(t, "upgrade", "--timeout", "60s")
	stop()
	<-watched
	if err != nil {
		t.Fatalf("upgrade: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(untainted) == 0 {
		t.Errorf("%s: no taint %s seen coming off during the upgrade\n%s", host, harvester.TaintKubeVirtDrain, out)
	}
	for _, state := range untainted {
		if state != "Post-draining" && state != "Succeeded" {
			t.Errorf("%s: taint %s removed while the Upgrade had the host %q (want only by the post-drain: Post-draining or Succeeded)\n%s",
				host, harvester.TaintKubeVirtDrain, state, out)
		}
	}
	name := regexp.MustCompile(`(?m)^upgrade harvester-system/(hvst-upgrade-\S+)$`).FindStringSubmatch(out)
	if name == nil {
		t.Fatalf("the report names no Upgrade:\n%s", out)
	}
	u, err := env.dyn.Resource(gvrUpgrade).Namespace("harvester-system").Get(testContext(t), name[1], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := u.GetLabels(); l[labelUpgradeState] != "Succeeded" || l[labelUpgradeCleanup] != "Succeeded" || !kubeapi.ConditionTrue(u, "Completed") {
		t.Errorf("Upgrade %s: labels %v, conditions %v; want upgradeState and upgradeCleanup Succeeded, Completed True", name[1], l, u.Object["status"])
	}

	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": []corev1.Taint{{Key: harvester.TaintKubeVirtDrain, Value: "draining", Effect: corev1.TaintEffectNoSchedule}}}})
	if _, err := env.kube.CoreV1().Nodes().Patch(testContext(t), host, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := simtest.WaitNode(testContext(t), env.kube, host, func(n *corev1.Node) bool {
		return !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == harvester.TaintKubeVirtDrain })
	}); err != nil {
		t.Errorf("%s: its drain taint not taken off with no upgrade under way: %v", host, err)
	}
}

// hostUpgradeState is the host's state in the latest Upgrade's
// status.nodeStatuses ("" when there is none).
func hostUpgradeState(ctx context.Context, t *testing.T, host string) string {
	list, err := env.dyn.Resource(gvrUpgrade).Namespace("harvester-system").List(ctx, metav1.ListOptions{LabelSelector: "harvesterhci.io/latestUpgrade=true"})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("latest Upgrade: %v (%d found)", err, len(list.Items))
		return ""
	}
	state, _, _ := unstructured.NestedString(list.Items[0].Object, "status", "nodeStatuses", host, "state")
	return state
}
