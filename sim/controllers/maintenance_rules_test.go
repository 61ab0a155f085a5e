package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func vmiWith(name string, strategy *kubevirtv1.EvictionStrategy, migratable corev1.ConditionStatus, reason string) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	v.Spec.EvictionStrategy = strategy
	if migratable != "" {
		v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: migratable, Reason: reason}}
	}
	return v
}

// TestEvictionOf: KubeVirt v1.7's eviction admission per strategy and
// LiveMigratable (pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go).
func TestEvictionOf(t *testing.T) {
	lm, ifp, none, ext := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyLiveMigrateIfPossible, kubevirtv1.EvictionStrategyNone, kubevirtv1.EvictionStrategyExternal
	for _, tc := range []struct {
		name     string
		strategy *kubevirtv1.EvictionStrategy
		mig      corev1.ConditionStatus
		want     harvester.Eviction
	}{
		{"default (Harvester: LiveMigrate), migratable", nil, corev1.ConditionTrue, harvester.EvictionMigrates},
		{"LiveMigrate, not migratable", &lm, corev1.ConditionFalse, harvester.EvictionRefused},
		{"LiveMigrateIfPossible, migratable", &ifp, corev1.ConditionTrue, harvester.EvictionMigrates},
		{"LiveMigrateIfPossible, not migratable", &ifp, corev1.ConditionFalse, harvester.EvictionShutsDown},
		{"LiveMigrateIfPossible, no condition", &ifp, "", harvester.EvictionShutsDown},
		{"None", &none, corev1.ConditionTrue, harvester.EvictionShutsDown},
		{"External", &ext, corev1.ConditionTrue, harvester.EvictionRefused},
	} {
		if got, why := evictionOf(vmiWith("v", tc.strategy, tc.mig, "R")); got != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

// TestNonMigratableVMsAndRefusal: Harvester's FindNonMigratableVMS keys and
// the nodedrain controller's error text, written out by hand.
func TestNonMigratableVMsAndRefusal(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"zone": "1"}}, Status: corev1.NodeStatus{Conditions: ready}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"zone": "2"}}, Status: corev1.NodeStatus{Conditions: ready}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"zone": "1"}}, Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: ready}},
	}
	gpu := vmiWith("gpu", nil, corev1.ConditionFalse, "HostDeviceNotLiveMigratable")
	pinned := vmiWith("pinned", nil, corev1.ConditionTrue, "")
	pinned.Spec.NodeSelector = map[string]string{"zone": "1"} // only a (the source) and c (cordoned)
	free := vmiWith("free", nil, corev1.ConditionTrue, "")
	got, err := nonMigratableVMs([]*kubevirtv1.VirtualMachineInstance{gpu, pinned, free}, "a", nodes)
	if err != nil || len(got) != 2 || strings.Join(got["HostDeviceNotLiveMigratable"], ",") != "ns/gpu" || strings.Join(got["NodeSchedulingRequirementsNotMet"], ",") != "ns/pinned" {
		t.Fatalf("nonMigratableVMs = %v", got)
	}
	want := "enabling maintenance mode is impossible. Non-migratable VMs found: ns/gpu cannot be migrated due to HostDeviceNotLiveMigratable; " +
		"ns/pinned cannot be migrated due to NodeSchedulingRequirementsNotMet. Use 'force drain' to perform a collective shutdown"
	if msg := maintenanceRefusal(got); msg != want {
		t.Errorf("refusal = %q\nwant      %q", msg, want)
	}
}
