package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// printableInvalidSpec is shown when a VM spec does not decode into the
// KubeVirt types (real KubeVirt would have rejected it in its webhook).
const printableInvalidSpec kubevirtv1.VirtualMachinePrintableStatus = "ErrorInvalidSpec"

// Condition types and reasons the simulator sets beyond KubeVirt's constants.
const (
	condPodScheduled     = kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled)
	reasonUnschedulableC = corev1.PodReasonUnschedulable
	reasonInvalidSpec    = "InvalidSpec"
)

// vmiAction is what the VM controller does to the VMI.
type vmiAction int

const (
	actionNone vmiAction = iota
	actionCreate
	actionDelete
	actionShutdown // the guest powers off: the VMI ends in phase Succeeded
)

func (a vmiAction) String() string {
	return [...]string{"none", "create", "delete", "shutdown"}[a]
}

// decideVMIAction applies KubeVirt's run strategies: Always and
// RerunOnFailure keep a VMI (re-created after deletion, so a restart is a
// delete); Always also replaces a finished VMI and RerunOnFailure a failed
// one; Halted deletes it; Manual leaves it alone. blocked stops creation.
func decideVMIAction(strategy kubevirtv1.VirtualMachineRunStrategy, vmi *kubevirtv1.VirtualMachineInstance, blocked bool) (vmiAction, error) {
	exists := vmi != nil
	deleting := exists && vmi.DeletionTimestamp != nil
	var phase kubevirtv1.VirtualMachineInstancePhase
	if exists {
		phase = vmi.Status.Phase
	}
	switch strategy {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure:
		switch {
		case !exists && !blocked:
			return actionCreate, nil
		case deleting || !exists:
			return actionNone, nil
		case phase == kubevirtv1.Failed,
			phase == kubevirtv1.Succeeded && strategy == kubevirtv1.RunStrategyAlways:
			return actionDelete, nil
		}
		return actionNone, nil
	case kubevirtv1.RunStrategyHalted:
		if exists && !deleting {
			return actionDelete, nil
		}
		return actionNone, nil
	case kubevirtv1.RunStrategyManual:
		return actionNone, nil
	}
	return actionNone, fmt.Errorf("spec.runStrategy %q is not supported by the simulator (use Always, RerunOnFailure, Manual or Halted)", strategy)
}

// startBlock says why a VM cannot start yet.
type startBlock struct {
	Printable kubevirtv1.VirtualMachinePrintableStatus
	Reason    string
	Message   string
}

// vmStatusInput gathers everything the VM status is computed from.
type vmStatusInput struct {
	VM          *kubevirtv1.VirtualMachine // decoded; nil when the spec did not decode
	Generation  int64
	Deleting    bool
	SpecError   error // decode / run strategy / claim template problems
	Strategy    kubevirtv1.VirtualMachineRunStrategy
	Block       *startBlock
	VMI         *kubevirtv1.VirtualMachineInstance // nil when absent
	Previous    kubevirtv1.VirtualMachineStatus
	Now         metav1.Time
	WantRunning bool
	// StateChangeRequests are the start/stop requests still pending.
	StateChangeRequests []kubevirtv1.VirtualMachineStateChangeRequest
	// Reconciled: volume requests are in the spec and StateChangeRequests
	// is what is left of the pending ones (else both stay as they were).
	Reconciled bool
}

// computeVMStatus derives the VM status from its VMI like KubeVirt's VM
// controller: created, ready, printableStatus, Ready/Failure conditions and
// the VMI's PodScheduled condition when it is not True.
func computeVMStatus(in vmStatusInput) kubevirtv1.VirtualMachineStatus {
	st := in.Previous.DeepCopy()
	st.Created = in.VMI != nil
	st.Ready = false
	st.ObservedGeneration = in.Generation
	st.DesiredGeneration = in.Generation
	if in.Strategy != "" {
		st.RunStrategy = in.Strategy
	}
	var conds []kubevirtv1.VirtualMachineCondition
	ready := kubevirtv1.VirtualMachineCondition{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse,
		Reason: "VMINotExists", Message: "VMI does not exist"}
	if in.VMI != nil {
		ready.Reason, ready.Message = "VMINotReady", "VMI is not ready"
		if c := vmiCondition(in.VMI, kubevirtv1.VirtualMachineInstanceReady); c != nil {
			ready.Status, ready.Reason, ready.Message = c.Status, c.Reason, c.Message
		}
		st.Ready = in.VMI.Status.Phase == kubevirtv1.Running && ready.Status == corev1.ConditionTrue && in.VMI.DeletionTimestamp == nil
		if c := vmiCondition(in.VMI, condPodScheduled); c != nil && c.Status != corev1.ConditionTrue {
			conds = append(conds, kubevirtv1.VirtualMachineCondition{Type: kubevirtv1.VirtualMachineConditionType(c.Type),
				Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	if !st.Ready && ready.Status == corev1.ConditionTrue {
		ready.Status = corev1.ConditionFalse
	}
	if in.Block != nil && in.VMI == nil {
		ready.Reason, ready.Message = in.Block.Reason, in.Block.Message
	}
	conds = append([]kubevirtv1.VirtualMachineCondition{ready}, conds...)
	if in.SpecError != nil {
		conds = append(conds, kubevirtv1.VirtualMachineCondition{Type: kubevirtv1.VirtualMachineFailure,
			Status: corev1.ConditionTrue, Reason: reasonInvalidSpec, Message: in.SpecError.Error()})
	}
	st.Conditions = carryVMConditionTimes(conds, in.Previous.Conditions, in.Now)
	st.PrintableStatus = printableStatus(in)
	return *st
}

func printableStatus(in vmStatusInput) kubevirtv1.VirtualMachinePrintableStatus {
	vmi := in.VMI
	switch {
	case in.SpecError != nil && vmi == nil:
		return printableInvalidSpec
	case in.Deleting:
		return kubevirtv1.VirtualMachineStatusTerminating
	case vmi == nil && in.Block != nil:
		return in.Block.Printable
	case vmi == nil && in.WantRunning:
		return kubevirtv1.VirtualMachineStatusStarting
	case vmi == nil:
		return kubevirtv1.VirtualMachineStatusStopped
	case vmi.DeletionTimestamp != nil || in.Strategy == kubevirtv1.RunStrategyHalted:
		return kubevirtv1.VirtualMachineStatusStopping
	}
	switch vmi.Status.Phase {
	case kubevirtv1.Running:
		return kubevirtv1.VirtualMachineStatusRunning
	case kubevirtv1.Succeeded, kubevirtv1.Failed:
		return kubevirtv1.VirtualMachineStatusStopped
	}
	if c := vmiCondition(vmi, condPodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == reasonUnschedulableC {
		return kubevirtv1.VirtualMachineStatusUnschedulable
	}
	return kubevirtv1.VirtualMachineStatusStarting
}

func vmiCondition(vmi *kubevirtv1.VirtualMachineInstance, t kubevirtv1.VirtualMachineInstanceConditionType) *kubevirtv1.VirtualMachineInstanceCondition {
	for i := range vmi.Status.Conditions {
		if vmi.Status.Conditions[i].Type == t {
			return &vmi.Status.Conditions[i]
		}
	}
	return nil
}

// carryVMConditionTimes keeps LastTransitionTime of conditions whose status
// did not change, and stamps now on the others.
func carryVMConditionTimes(conds, prev []kubevirtv1.VirtualMachineCondition, now metav1.Time) []kubevirtv1.VirtualMachineCondition {
	for i := range conds {
		conds[i].LastTransitionTime = now
		conds[i].LastProbeTime = metav1.Time{}
		for _, p := range prev {
			if p.Type == conds[i].Type && p.Status == conds[i].Status {
				conds[i].LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return conds
}

// setVMICondition replaces (or adds) a VMI condition, keeping the
// transition time when the status is unchanged. It reports whether
// anything changed.
func setVMICondition(st *kubevirtv1.VirtualMachineInstanceStatus, c kubevirtv1.VirtualMachineInstanceCondition, now metav1.Time) bool {
	for i, old := range st.Conditions {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return false
		}
		c.LastTransitionTime = now
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		st.Conditions[i] = c
		return true
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
	return true
}

// removeVMICondition drops a condition type; it reports whether one was removed.
func removeVMICondition(st *kubevirtv1.VirtualMachineInstanceStatus, t kubevirtv1.VirtualMachineInstanceConditionType) bool {
	out := st.Conditions[:0]
	removed := false
	for _, c := range st.Conditions {
		if c.Type == t {
			removed = true
			continue
		}
		out = append(out, c)
	}
	st.Conditions = out
	return removed
}

// Delays drive the VMI phase machine.
type Delays struct {
	Schedule, Boot, IP time.Duration
}

// nextPhase returns the phase a VMI moves to now, or, when it has to stay,
// its current phase and how long until it may move. Scheduling waits for
// the schedule delay (the caller also needs a host), Scheduled for the boot
// delay; Running is final here (addresses are handled by ipDue).
func nextPhase(phase kubevirtv1.VirtualMachineInstancePhase, since, now time.Time, d Delays) (kubevirtv1.VirtualMachineInstancePhase, time.Duration) {
	switch phase {
	case kubevirtv1.VmPhaseUnset:
		return kubevirtv1.Pending, 0
	case kubevirtv1.Pending:
		return kubevirtv1.Scheduling, 0
	case kubevirtv1.Scheduling:
		if wait := since.Add(d.Schedule).Sub(now); wait > 0 {
			return phase, wait
		}
		return kubevirtv1.Scheduled, 0
	case kubevirtv1.Scheduled:
		if wait := since.Add(d.Boot).Sub(now); wait > 0 {
			return phase, wait
		}
		return kubevirtv1.Running, 0
	}
	return phase, 0
}

// phaseSince returns when the VMI entered its current phase according to
// its status (second precision), falling back to fallback.
func phaseSince(st *kubevirtv1.VirtualMachineInstanceStatus, fallback time.Time) time.Time {
	for i := len(st.PhaseTransitionTimestamps) - 1; i >= 0; i-- {
		if ts := st.PhaseTransitionTimestamps[i]; ts.Phase == st.Phase {
			return ts.PhaseTransitionTimestamp.Time
		}
	}
	return fallback
}

// enterPhase moves the status to a new phase and records the transition.
func enterPhase(st *kubevirtv1.VirtualMachineInstanceStatus, phase kubevirtv1.VirtualMachineInstancePhase, now metav1.Time) {
	st.Phase = phase
	st.PhaseTransitionTimestamps = append(st.PhaseTransitionTimestamps,
		kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: now})
}

// addressPlan says whether a running VMI should report addresses now.
type addressPlan struct {
	Report bool          // addresses are to be shown
	Wait   time.Duration // > 0: not yet, look again after Wait
	Why    string        // when Report is false and Wait is 0: why never
}

// planAddresses applies the IP rule: only a guest running qemu-guest-agent
// reports addresses, and only IP delay after it started running; the no-ip
// fault suppresses them.
func planAddresses(agent bool, agentWhy string, faultPattern string, runningSince, now time.Time, ipDelay time.Duration) addressPlan {
	switch {
	case faultPattern != "":
		return addressPlan{Why: fmt.Sprintf("simulator fault %s (pattern %s) withholds addresses", fault.NoIP, faultPattern)}
	case !agent:
		return addressPlan{Why: agentWhy}
	}
	if wait := runningSince.Add(ipDelay).Sub(now); wait > 0 {
		return addressPlan{Wait: wait}
	}
	return addressPlan{Report: true}
}
