package sim_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/tunables"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// mtMigration is how long a live migration's transfer runs in
// TestMigrationTargetHostDown: long enough that the target host dies, and
// its Pod is force-deleted, while the first one runs.
const mtMigration = 40 * time.Second

// KubeVirt v1.7's messages for a migration whose target went away
// (pkg/virt-controller/watch/migration/migration.go), whichever it sees
// first: pod GC marks the dead host's target Pod Failed before it deletes
// it ("target pod shutdown"), the Pod is gone ("removed"), or the source
// virt-handler reports the transfer failed (libvirt's connection to the dead
// target timed out).
var targetGoneMessages = []string{
	"Migration failed because target pod shutdown during migration",
	"Migration target pod was removed during active migration.",
	"source node reported migration failed",
}

// TestMigrationTargetHostDown is the attack of issue 39: a host goes into
// maintenance, KubeVirt's eviction webhook turns the drain into an
// evacuation, and the target host of that migration dies mid-transfer. The
// migration fails with KubeVirt's message, KubeVirt's evacuation controller
// migrates the VM again to the third host, and the maintenance finishes.
// (The simulator once waited for the dead host forever.) Then the failed
// evacuation it leaves behind is what the next upgrade judges
// (upgradeAfterFailedEvacuation). It runs on the package's simulator, the
// grace period and the migration's transfer tuned for it; the package's
// tests run one at a time, and it leaves no VM, fault or maintenance.
func TestMigrationTargetHostDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	simtest.HostFailures(ctx, t, kube, dyn, hdGrace, hdPolicy)
	simtest.Tune(ctx, t, kube, map[string]string{tunables.MigrationDuration: mtMigration.String()})
	s, kc, vc := simulator, kube, virt
	t.Cleanup(func() { leaveAsFound(ctx, t, "mt-vm", "hu-pin") })

	vm := hostDownVM("mt-vm")
	live := kubevirtv1.EvictionStrategyLiveMigrate
	vm.Spec.Template.Spec.EvictionStrategy = &live
	if _, err := vc.KubevirtV1().VirtualMachines("default").Create(ctx, vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitVMIOn(ctx, t, vc, "mt-vm", "Running and live-migratable", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCondition(v, kubevirtv1.VirtualMachineInstanceIsMigratable)
		return v.Status.Phase == kubevirtv1.Running && c != nil && c.Status == corev1.ConditionTrue
	})
	source := first.Status.NodeName

	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	maint := exec.CommandContext(ctx, bin, "maintenance", "enable", "--state-dir", s.Dir, "--timeout", "5m", source)
	maint.Stdout, maint.Stderr = &out, &out
	if err := maint.Start(); err != nil {
		t.Fatal(err)
	}

	// The evacuation's transfer runs; its target host dies.
	moving := waitVMIOn(ctx, t, vc, "mt-vm", "migrating", func(v *kubevirtv1.VirtualMachineInstance) bool {
		ms := v.Status.MigrationState
		return ms != nil && ms.StartTimestamp != nil && ms.EndTimestamp == nil
	})
	ms := moving.Status.MigrationState
	target, firstMigration := ms.TargetNode, string(ms.MigrationUID)
	if err := s.Fault(ctx, "host-down", target); err != nil {
		t.Fatal(err)
	}
	t.Logf("evacuation %s from %s to %s; %s down", firstMigration, source, target, target)

	// KubeVirt fails it with its message and evacuates again.
	failed := waitMigration(ctx, t, vc, firstMigration, kubevirtv1.MigrationFailed)
	if !strings.HasPrefix(failed.Name, "kubevirt-evacuation-") {
		t.Errorf("migration %s is not the evacuation controller's", failed.Name)
	}
	if msg := failedMigrationEvent(ctx, t, kc, failed); !containsAny(msg, targetGoneMessages) {
		t.Errorf("FailedMigration events of %s: %q, want one of %q", failed.Name, msg, targetGoneMessages)
	}
	moved := waitVMIOn(ctx, t, vc, "mt-vm", "migrated to the third host", func(v *kubevirtv1.VirtualMachineInstance) bool {
		ms := v.Status.MigrationState
		return v.Status.Phase == kubevirtv1.Running && ms != nil && ms.Completed && !ms.Failed && string(ms.MigrationUID) != firstMigration
	})
	if moved.UID != first.UID || moved.Status.NodeName == source || moved.Status.NodeName == target {
		t.Errorf("VMI %s on %s, want the same VMI %s on the host neither %s nor %s", moved.UID, moved.Status.NodeName, first.UID, source, target)
	}

	// The drain finishes.
	if err := maint.Wait(); err != nil {
		t.Fatalf("maintenance enable %s: %v\n%s", source, err, out.String())
	}
	if want := "migrated  default/mt-vm -> " + moved.Status.NodeName; !strings.Contains(out.String(), want) {
		t.Errorf("maintenance report lacks %q:\n%s", want, out.String())
	}
	n, err := kc.CoreV1().Nodes().Get(ctx, source, metav1.GetOptions{})
	if err != nil || n.Annotations[harvester.AnnMaintainStatus] != harvester.MaintainCompleted {
		t.Errorf("host %s maintain-status %q (%v), want completed", source, n.Annotations[harvester.AnnMaintainStatus], err)
	}
	t.Run("the upgrade after it", func(t *testing.T) { upgradeAfterFailedEvacuation(ctx, t, s, kc, vc, source, target) })
}

// leaveAsFound deletes the test's VMs and, when it failed midway, ends
// every host failure and maintenance: the package's later tests share the
// simulator.
func leaveAsFound(ctx context.Context, t *testing.T, vms ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 4*time.Minute)
	defer cancel()
	if t.Failed() {
		if err := simulator.Fault(ctx, "clear"); err != nil {
			t.Logf("clear the faults: %v", err)
		}
		for _, host := range otherHosts(ctx, t, kube, "") {
			if out, err := simCLI(t, "maintenance", "disable", "--state-dir", simulator.Dir, host); err != nil {
				t.Logf("maintenance disable %s: %v\n%s", host, err, out)
			}
		}
	}
	for _, name := range vms {
		if err := simtest.DeleteVM(ctx, virt, "default", name); err != nil {
			t.Error(err)
		}
	}
}

// waitMigration waits for the migration of uid (in default) to reach phase.
func waitMigration(ctx context.Context, t *testing.T, vc kubevirt.Interface, uid string, phase kubevirtv1.VirtualMachineInstanceMigrationPhase) *kubevirtv1.VirtualMachineInstanceMigration {
	t.Helper()
	migrations := vc.KubevirtV1().VirtualMachineInstanceMigrations("default")
	list, err := migrations.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	for _, m := range list.Items {
		if string(m.UID) == uid {
			name = m.Name
		}
	}
	if name == "" {
		t.Fatalf("no migration of UID %s: %d migrations", uid, len(list.Items))
	}
	k := kubeapi.KindOf[*kubevirtv1.VirtualMachineInstanceMigrationList]("migration", &kubevirtv1.VirtualMachineInstanceMigration{}, migrations)
	m, err := kubeapi.Wait(ctx, k, "default", name, 0, func(m *kubevirtv1.VirtualMachineInstanceMigration) (bool, error) {
		return m != nil && m.Status.Phase == phase, nil
	})
	if err != nil {
		t.Fatalf("migration %s never %s: %v", name, phase, err)
	}
	return m
}

// failedMigrationEvent is the messages of the migration's FailedMigration
// events, joined.
func failedMigrationEvent(ctx context.Context, t *testing.T, kc kubernetes.Interface, m *kubevirtv1.VirtualMachineInstanceMigration) string {
	t.Helper()
	sel := fields.Set{"involvedObject.uid": string(m.UID), "reason": "FailedMigration"}.AsSelector().String()
	events, err := kc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range events.Items {
		msgs = append(msgs, e.Message)
	}
	return strings.Join(msgs, " | ")
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
