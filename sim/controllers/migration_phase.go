package controllers

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt v1.7's names around a migration (kubevirt.io/api core/v1 and
// pkg/virt-controller/watch/migration).
const (
	// LabelMigrationVMI is the label the migration controller puts on a
	// migration naming its VMI (MigrationSelectorLabel).
	LabelMigrationVMI = kubevirtv1.MigrationSelectorLabel // kubevirt.io/vmi-name
	// AnnUnschedulableTimeout overrides how long an unschedulable target
	// pod may stay Pending (default 300 s).
	AnnUnschedulableTimeout = kubevirtv1.MigrationUnschedulablePodTimeoutSecondsAnnotation
	// DefaultUnschedulableTimeout is defaultUnschedulablePendingTimeoutSeconds.
	DefaultUnschedulableTimeout = 300 * time.Second
	// AnnEvacuationMigration marks the migrations KubeVirt's evacuation
	// controller creates for a drained host.
	AnnEvacuationMigration = kubevirtv1.EvacuationMigrationAnnotation
)

// targetPod is the migration's target launcher pod (a real Pod, placed by
// kube-scheduler) as the simulator keeps it: its name, the host the
// scheduler bound it to ("" while unschedulable, with the scheduler's why) and when it was created and placed.
type targetPod struct {
	Name          string
	Node          string
	Unschedulable string
	Created       time.Time
	Placed        time.Time
	Deleted       bool // removed (timed out) before the hand-off
}

// migrationView is what the migration phase machine looks at.
type migrationView struct {
	Phase kubevirtv1.VirtualMachineInstanceMigrationPhase
	UID   types.UID
	// VMI is nil when it does not exist.
	VMI *kubevirtv1.VirtualMachineInstance
	// OtherActive: the VMI's migration state belongs to another migration
	// that is not final (KubeVirt's canMigrateVMI is false).
	OtherActive bool
	Target      *targetPod // nil until created
	Now         time.Time
	// TargetBoot is how long a placed target pod takes to become ready;
	// Duration how long the memory transfer runs; UnschedulableTimeout
	// when an unschedulable target pod is deleted.
	TargetBoot, Duration, UnschedulableTimeout time.Duration
	// SourceDown, TargetDown: the virt-handler of the VMI's host, or of
	// the target pod's host, is down (its host's kubelet is): nothing it
	// does happens.
	SourceDown, TargetDown bool
}

// migrationAction is what the controller does in one step.
type migrationAction int

const (
	migNone            migrationAction = iota
	migCreateTarget                    // create (and try to place) the target pod
	migDeleteTarget                    // the unschedulable target pod timed out
	migHandOff                         // write the VMI's migration state: source, target, UID
	migTargetReady                     // target virt-handler reports its address
	migStart                           // source virt-handler starts the transfer
	migComplete                        // the VMI now runs on the target
	migRecordFinal                     // copy the VMI's final migration state
	migTargetPlacement                 // (re)try placing the target pod
)

// migrationStep is one decision: the phase to write, the action and the
// event (reason, message; "" for none) and when to look again.
type migrationStep struct {
	Phase   kubevirtv1.VirtualMachineInstanceMigrationPhase
	Action  migrationAction
	Warning bool
	Reason  string
	Message string
	Wait    time.Duration
}

// handlerDownRetry is how often a migration waiting for a virt-handler on
// a down host looks again.
const handlerDownRetry = time.Second

// stepMigration is KubeVirt v1.7's migration controller (updateStatus,
// processMigrationPhase, sync) with virt-handler's part, for a local
// migration without hot-plug volumes.
func stepMigration(v migrationView) migrationStep {
	st := migrationStep{Phase: v.Phase}
	final := v.Phase == kubevirtv1.MigrationSucceeded || v.Phase == kubevirtv1.MigrationFailed
	var ms *kubevirtv1.VirtualMachineInstanceMigrationState
	if v.VMI != nil {
		ms = v.VMI.Status.MigrationState
	}
	synced := ms != nil && ms.MigrationUID == v.UID
	switch {
	case final:
		if synced && v.VMI != nil {
			st.Action = migRecordFinal
		}
		return st
	case v.VMI == nil:
		return fail(st, "Migration failed because vmi does not exist.")
	case v.VMI.IsFinal():
		return fail(st, "Migration failed vmi shutdown during migration.")
	case v.Target != nil && v.Target.Deleted:
		return fail(st, "Migration target pod was removed during active migration.")
	case synced && ms.Failed:
		return fail(st, "source node reported migration failed")
	}
	switch v.Phase {
	case kubevirtv1.MigrationPhaseUnset:
		if v.OtherActive {
			return fail(st, "VMI is not eligible for migration because another migration job is in progress.")
		}
		st.Phase = kubevirtv1.MigrationPending
	case kubevirtv1.MigrationPending:
		if v.Target == nil {
			st.Action = migCreateTarget
			return st
		}
		st.Phase = kubevirtv1.MigrationScheduling
	case kubevirtv1.MigrationScheduling:
		t := v.Target
		if t.Node == "" {
			if waited := v.Now.Sub(t.Created); waited >= v.UnschedulableTimeout {
				st.Action, st.Reason = migDeleteTarget, "SuccessfulDelete"
				st.Message = fmt.Sprintf("unschedulable pod %s/%s timeout period exceeded", v.VMI.Namespace, t.Name)
				return st
			}
			st.Action, st.Warning, st.Reason = migTargetPlacement, true, "MigrationTargetPodUnschedulable"
			st.Message = fmt.Sprintf("Migration target pod for VMI [%s/%s] is currently unschedulable.", v.VMI.Namespace, v.VMI.Name)
			st.Wait = v.UnschedulableTimeout - v.Now.Sub(t.Created)
			return st
		}
		if wait := t.Placed.Add(v.TargetBoot).Sub(v.Now); wait > 0 {
			st.Wait = wait
			return st
		}
		st.Phase = kubevirtv1.MigrationScheduled
	case kubevirtv1.MigrationScheduled:
		if !synced {
			st.Action, st.Reason, st.Message = migHandOff, "SuccessfulHandOver", "Migration target pod is ready for preparation by virt-handler."
			return st
		}
		st.Phase = kubevirtv1.MigrationPreparingTarget
	case kubevirtv1.MigrationPreparingTarget:
		if ms.TargetNodeAddress == "" && v.TargetDown {
			st.Wait = handlerDownRetry
			return st
		}
		if ms.TargetNodeAddress == "" {
			st.Action = migTargetReady
			return st
		}
		st.Phase = kubevirtv1.MigrationTargetReady
	case kubevirtv1.MigrationTargetReady:
		if ms.StartTimestamp == nil && v.SourceDown {
			st.Wait = handlerDownRetry
			return st
		}
		if ms.StartTimestamp == nil {
			st.Action = migStart
			return st
		}
		st.Phase = kubevirtv1.MigrationRunning
	case kubevirtv1.MigrationRunning:
		if !ms.Completed && (v.SourceDown || v.TargetDown) {
			st.Wait = handlerDownRetry
			return st
		}
		if !ms.Completed {
			if wait := ms.StartTimestamp.Add(v.Duration).Sub(v.Now); wait > 0 {
				st.Wait = wait
				return st
			}
			st.Action = migComplete
			return st
		}
		st.Phase, st.Reason, st.Message = kubevirtv1.MigrationSucceeded, "SuccessfulMigration", "Source node reported migration succeeded"
	}
	return st
}

func fail(st migrationStep, msg string) migrationStep {
	st.Phase, st.Warning, st.Reason, st.Message = kubevirtv1.MigrationFailed, true, "FailedMigration", msg
	return st
}

// unschedulableTimeout is the migration's annotation in seconds, else the default.
func unschedulableTimeout(ann map[string]string) time.Duration {
	if v, ok := ann[AnnUnschedulableTimeout]; ok {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
			return time.Duration(secs) * time.Second
		}
	}
	return DefaultUnschedulableTimeout
}
