package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/kv"
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
		want     kv.Eviction
	}{
		{"default (Harvester: LiveMigrate), migratable", nil, corev1.ConditionTrue, kv.Migrates},
		{"LiveMigrate, not migratable", &lm, corev1.ConditionFalse, kv.Refused},
		{"LiveMigrateIfPossible, migratable", &ifp, corev1.ConditionTrue, kv.Migrates},
		{"LiveMigrateIfPossible, not migratable", &ifp, corev1.ConditionFalse, kv.ShutsDown},
		{"LiveMigrateIfPossible, no condition", &ifp, "", kv.ShutsDown},
		{"None", &none, corev1.ConditionTrue, kv.ShutsDown},
		{"External", &ext, corev1.ConditionTrue, kv.Refused},
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

// TestStepMigration walks KubeVirt's phases of a local migration and its
// failure paths (messages of pkg/virt-controller/watch/migration).
func TestStepMigration(t *testing.T) {
	now := time.Now()
	vmi := vmiWith("v", nil, corev1.ConditionTrue, "")
	vmi.Status.Phase = kubevirtv1.Running
	placed := &targetPod{Name: "virt-launcher-v-abcde", Node: "b", Created: now.Add(-time.Minute), Placed: now.Add(-time.Minute)}
	base := migrationView{UID: "m1", VMI: vmi, Now: now, TargetBoot: time.Second, Duration: time.Second, UnschedulableTimeout: 300 * time.Second}
	synced := func(f func(*kubevirtv1.VirtualMachineInstanceMigrationState)) *kubevirtv1.VirtualMachineInstance {
		v := vmi.DeepCopy()
		v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m1", TargetNode: "b"}
		f(v.Status.MigrationState)
		return v
	}
	started := metav1.NewTime(now.Add(-2 * time.Second))
	for _, tc := range []struct {
		name   string
		edit   func(*migrationView)
		phase  kubevirtv1.VirtualMachineInstanceMigrationPhase
		action migrationAction
		msg    string
	}{
		{"new", func(v *migrationView) {}, kubevirtv1.MigrationPending, migNone, ""},
		{"another in flight", func(v *migrationView) { v.OtherActive = true }, kubevirtv1.MigrationFailed, migNone, "VMI is not eligible for migration because another migration job is in progress."},
		{"pending creates target", func(v *migrationView) { v.Phase = kubevirtv1.MigrationPending }, kubevirtv1.MigrationPending, migCreateTarget, ""},
		{"target exists", func(v *migrationView) { v.Phase, v.Target = kubevirtv1.MigrationPending, placed }, kubevirtv1.MigrationScheduling, migNone, ""},
		{"target ready", func(v *migrationView) { v.Phase, v.Target = kubevirtv1.MigrationScheduling, placed }, kubevirtv1.MigrationScheduled, migNone, ""},
		{"unschedulable", func(v *migrationView) {
			v.Phase, v.Target = kubevirtv1.MigrationScheduling, &targetPod{Name: "p", Created: now.Add(-time.Minute)}
		}, kubevirtv1.MigrationScheduling, migTargetPlacement, "Migration target pod for VMI [ns/v] is currently unschedulable."},
		{"unschedulable past 300s", func(v *migrationView) {
			v.Phase, v.Target = kubevirtv1.MigrationScheduling, &targetPod{Name: "p", Created: now.Add(-301 * time.Second)}
		}, kubevirtv1.MigrationScheduling, migDeleteTarget, "unschedulable pod ns/p timeout period exceeded"},
		{"target removed", func(v *migrationView) {
			v.Phase, v.Target = kubevirtv1.MigrationScheduling, &targetPod{Name: "p", Deleted: true}
		}, kubevirtv1.MigrationFailed, migNone, "Migration target pod was removed during active migration."},
		{"hand-off", func(v *migrationView) { v.Phase, v.Target = kubevirtv1.MigrationScheduled, placed }, kubevirtv1.MigrationScheduled, migHandOff, "Migration target pod is ready for preparation by virt-handler."},
		{"preparing", func(v *migrationView) {
			v.Phase, v.Target, v.VMI = kubevirtv1.MigrationScheduled, placed, synced(func(*kubevirtv1.VirtualMachineInstanceMigrationState) {})
		}, kubevirtv1.MigrationPreparingTarget, migNone, ""},
		{"target address", func(v *migrationView) {
			v.Phase, v.Target, v.VMI = kubevirtv1.MigrationPreparingTarget, placed, synced(func(m *kubevirtv1.VirtualMachineInstanceMigrationState) { m.TargetNodeAddress = "b" })
		}, kubevirtv1.MigrationTargetReady, migNone, ""},
		{"started", func(v *migrationView) {
			v.Phase, v.Target, v.VMI = kubevirtv1.MigrationTargetReady, placed, synced(func(m *kubevirtv1.VirtualMachineInstanceMigrationState) { m.StartTimestamp = &started })
		}, kubevirtv1.MigrationRunning, migNone, ""},
		{"transfer done", func(v *migrationView) {
			v.Phase, v.Target, v.VMI = kubevirtv1.MigrationRunning, placed, synced(func(m *kubevirtv1.VirtualMachineInstanceMigrationState) { m.StartTimestamp = &started })
		}, kubevirtv1.MigrationRunning, migComplete, ""},
		{"completed", func(v *migrationView) {
			v.Phase, v.Target, v.VMI = kubevirtv1.MigrationRunning, placed, synced(func(m *kubevirtv1.VirtualMachineInstanceMigrationState) {
				m.StartTimestamp, m.Completed = &started, true
			})
		}, kubevirtv1.MigrationSucceeded, migNone, "Source node reported migration succeeded"},
		{"source host down: not started", func(v *migrationView) {
			v.Phase, v.Target, v.VMI, v.SourceDown = kubevirtv1.MigrationTargetReady, placed, synced(func(m *kubevirtv1.VirtualMachineInstanceMigrationState) { m.TargetNodeAddress = "b" }), true
		}, kubevirtv1.MigrationTargetReady, migNone, ""},
		{"source host down: transfer never ends", func(v *migrationView) {
			v.Phase, v.Target, v.VMI, v.SourceDown = kubevirtv1.MigrationRunning, placed, synced(func(m *kubevirtv1.VirtualMachineInstanceMigrationState) { m.StartTimestamp = &started }), true
		}, kubevirtv1.MigrationRunning, migNone, ""},
		{"target host down: not prepared", func(v *migrationView) {
			v.Phase, v.Target, v.VMI, v.TargetDown = kubevirtv1.MigrationPreparingTarget, placed, synced(func(*kubevirtv1.VirtualMachineInstanceMigrationState) {}), true
		}, kubevirtv1.MigrationPreparingTarget, migNone, ""},
		{"vmi gone", func(v *migrationView) { v.Phase, v.VMI = kubevirtv1.MigrationRunning, nil }, kubevirtv1.MigrationFailed, migNone, "Migration failed because vmi does not exist."},
		{"vmi shut down", func(v *migrationView) {
			v.Phase, v.VMI = kubevirtv1.MigrationScheduling, vmi.DeepCopy()
			v.VMI.Status.Phase = kubevirtv1.Succeeded
		}, kubevirtv1.MigrationFailed, migNone, "Migration failed vmi shutdown during migration."},
	} {
		v := base
		tc.edit(&v)
		got := stepMigration(v)
		if got.Phase != tc.phase || got.Action != tc.action || got.Message != tc.msg {
			t.Errorf("%s: phase %s action %d message %q, want %s %d %q", tc.name, got.Phase, got.Action, got.Message, tc.phase, tc.action, tc.msg)
		}
	}
	if d := unschedulableTimeout(map[string]string{AnnUnschedulableTimeout: "10"}); d != 10*time.Second {
		t.Errorf("annotation timeout = %s", d)
	}
}
