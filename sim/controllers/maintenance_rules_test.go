package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func vmiWith(name string, strategy *kubevirtv1.EvictionStrategy, migratable corev1.ConditionStatus, reason string) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	v.Spec.EvictionStrategy = strategy
	if migratable != "" {
		v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: migratable, Reason: reason}}
	}
	return v
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
