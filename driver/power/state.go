package power

import (
	"github.com/rancher/machine/libmachine/state"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// StateOf maps a VMI to a machine state; a VM without VMI is Stopped.
func StateOf(vmi *kubevirtv1.VirtualMachineInstance) state.State {
	if vmi == nil {
		return state.Stopped
	}
	if vmi.DeletionTimestamp != nil {
		return state.Stopping
	}
	switch vmi.Status.Phase {
	case kubevirtv1.VmPhaseUnset, kubevirtv1.Pending, kubevirtv1.Scheduling, kubevirtv1.Scheduled:
		return state.Starting
	case kubevirtv1.Running:
		return state.Running
	case kubevirtv1.Succeeded:
		return state.Stopped
	case kubevirtv1.Failed:
		return state.Error
	}
	return state.None
}
