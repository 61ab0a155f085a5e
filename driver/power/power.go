// Package power starts, stops, kills and restarts a machine's VM through
// its run strategy, and maps its VM instance to a machine state.
package power

import (
	"context"
	"fmt"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// restoreTimeout bounds putting back the run strategy after a failed restart.
const restoreTimeout = time.Minute

// setRunStrategy updates spec.runStrategy of the machine's own VM, retrying
// on conflicts, and returns the strategy it replaced (nil: none set).
func (d Control) setRunStrategy(ctx context.Context, api *harvesterapi.API, rs kubevirtv1.VirtualMachineRunStrategy) (*kubevirtv1.VirtualMachineRunStrategy, error) {
	var previous *kubevirtv1.VirtualMachineRunStrategy
	err := api.UpdateVM(ctx, d.VMNamespace, d.MachineName, "set run strategy "+string(rs), func(vm *kubevirtv1.VirtualMachine) (bool, error) {
		if err := d.CheckOwned("VM", d.MachineName, vm); err != nil {
			return false, err
		}
		previous = vm.Spec.RunStrategy
		if vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == rs {
			return false, nil
		}
		vm.Spec.Running = nil
		vm.Spec.RunStrategy = &rs
		return true, nil
	})
	return previous, err
}

// Start sets the run strategy to RerunOnFailure and waits until the VM runs
// with an address.
func (d Control) Start(ctx context.Context, api *harvesterapi.API) error {
	log.Infof("%s: starting", d.MachineName)
	if _, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyRerunOnFailure); err != nil {
		return err
	}
	_, err := d.WaitVMI(ctx, api, "", "to run and report an address", machine.RunningWithAddress)
	return err
}

// Stop halts the VM (run strategy Halted) and waits until its VMI is gone.
func (d Control) Stop(ctx context.Context, api *harvesterapi.API) error {
	log.Infof("%s: stopping", d.MachineName)
	if _, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	_, err := d.WaitVMI(ctx, api, "", "to stop", machine.NoVMI)
	return err
}

// Kill halts the VM and deletes its VMI without grace period, then waits
// until the VMI is gone.
func (d Control) Kill(ctx context.Context, api *harvesterapi.API) error {
	log.Infof("%s: killing", d.MachineName)
	if _, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	vmi, err := d.GetVMI(ctx, api)
	if err != nil {
		return err
	}
	if vmi != nil {
		zero := int64(0)
		if err := api.DeleteVMI(ctx, d.VMNamespace, d.MachineName, vmi.UID, &zero); err != nil {
			return err
		}
	}
	_, err = d.WaitVMI(ctx, api, "", "to be killed", machine.NoVMI)
	return err
}

// Restart deletes the running VMI and waits until a new one (new UID) runs
// with an address; a stopped machine is started. It runs the VM with
// strategy Always meanwhile and then restores the strategy it found,
// whether the restart succeeded or not.
func (d Control) Restart(ctx context.Context, api *harvesterapi.API) (err error) {
	if _, err := d.OwnVM(ctx, api); err != nil {
		return err
	}
	vmi, err := d.GetVMI(ctx, api)
	if err != nil {
		return err
	}
	if vmi == nil {
		return d.Start(ctx, api)
	}
	log.Infof("%s: restarting (VM instance %s)", d.MachineName, vmi.UID)
	// With Always the controller re-creates a deleted VMI whatever way it
	// ended.
	found, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyAlways)
	if err != nil {
		return err
	}
	defer func() { err = d.restoreRunStrategy(ctx, api, found, err) }()
	if err := api.DeleteVMI(ctx, d.VMNamespace, d.MachineName, vmi.UID, nil); err != nil {
		return err
	}
	_, err = d.WaitVMI(ctx, api, "", "to run again with a new instance", machine.NewRunningVMI(string(vmi.UID)))
	return err
}

// restoreRunStrategy puts back the run strategy a restart found (the
// machine's usual RerunOnFailure when none was set) and joins its error to
// the restart's.
func (d Control) restoreRunStrategy(parent context.Context, api *harvesterapi.API, found *kubevirtv1.VirtualMachineRunStrategy, restartErr error) error {
	rs := kubevirtv1.RunStrategyRerunOnFailure
	if found != nil {
		rs = *found
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), restoreTimeout)
	defer cancel()
	_, err := d.setRunStrategy(ctx, api, rs)
	switch {
	case err == nil:
		if restartErr != nil {
			log.Infof("%s: restart failed; run strategy restored to %s", d.MachineName, rs)
		}
		return restartErr
	case restartErr == nil:
		return err
	}
	return fmt.Errorf("%w; restoring run strategy %s also failed: %w", restartErr, rs, err)
}

// Control switches one machine's VM.
type Control struct{ *machine.Machine }
