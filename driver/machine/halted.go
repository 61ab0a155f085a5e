package machine

import (
	"errors"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// ErrVMHalted is the cause of a wait for the VM to run that ended because
// someone else halted the VM for good.
var ErrVMHalted = errors.New("and nothing starts it again")

// haltedForGood says why the machine's VM will not run unless someone
// starts it again (nil: it may still run). runsFrom is the VM's generation
// in which the driver set it running; a halt counts only in that
// generation or a later one (the driver's own halt before, the static
// address's create, does not). It is for good when its run strategy is
// Halted and no start request is pending: KubeVirt v1.7's VM controller
// starts a halted VM only on a start request, which a user's start makes
// (pkg/virt-controller/watch/vm/vm.go, syncRunStrategy, hasStartRequest);
// Harvester's halt for a quota (harvester.AnnotationInsufficientResourceQuota)
// is never undone by Harvester either.
func haltedForGood(vm *kubevirtv1.VirtualMachine, runsFrom int64) error {
	rs, err := vm.RunStrategy()
	if err != nil || rs != kubevirtv1.RunStrategyHalted || vm.Generation < runsFrom || startRequested(vm) {
		return nil
	}
	if why, ok := vm.Annotations[harvester.AnnotationInsufficientResourceQuota]; ok {
		return fmt.Errorf("was halted by Harvester for %s (%s), %w", harvester.ReasonInsufficientResourceQuota, why, ErrVMHalted)
	}
	return fmt.Errorf("was halted by someone else (runStrategy %s), %w", rs, ErrVMHalted)
}

// startRequested: the VM's first state change request is a start.
func startRequested(vm *kubevirtv1.VirtualMachine) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == kubevirtv1.StartRequest
}
