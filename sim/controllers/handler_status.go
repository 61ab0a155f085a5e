// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's VMI conditions.
// It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/vm.go.

package controllers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

func equalStatus(a, b kubevirtv1.VirtualMachineInstanceStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
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
