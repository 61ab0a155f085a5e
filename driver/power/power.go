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
// on conflicts, and returns the strategy it replaced (nil: none set) and
// the VM's generation from which on a change of the run strategy is
// someone else's (the generation it read, plus one: the VM carries rs
// from its change on, or already did).
func setRunStrategy(ctx context.Context, api *harvesterapi.API, m *machine.Machine, rs kubevirtv1.VirtualMachineRunStrategy) (*kubevirtv1.VirtualMachineRunStrategy, int64, error) {
	var previous *kubevirtv1.VirtualMachineRunStrategy
	var after int64
	err := api.UpdateVM(ctx, m.Config.VMNamespace, m.Name, "set run strategy "+string(rs), func(vm *kubevirtv1.VirtualMachine) (bool, error) {
		if err := m.Ownership.CheckOwned("VM", m.Name, vm); err != nil {
			return false, err
		}
		previous, after = vm.Spec.RunStrategy, vm.Generation+1
		if vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == rs {
			return false, nil
		}
		vm.Spec.Running = nil
		vm.Spec.RunStrategy = &rs
		return true, nil
	})
	return previous, after, err
}

// Start sets the run strategy to RerunOnFailure and waits until the VM runs
// with an address, or until it is halted for good (machine.WaitRunning).
func Start(ctx context.Context, api *harvesterapi.API, m *machine.Machine) error {
	log.Infof("%s: starting", m.Name)
	_, runsFrom, err := setRunStrategy(ctx, api, m, kubevirtv1.RunStrategyRerunOnFailure)
	if err != nil {
		return err
	}
	_, err = m.WaitRunning(ctx, api, "", runsFrom, "to run and report an address", machine.RunningWithAddress)
	return err
}

// Stop halts the VM (run strategy Halted) and waits until its VMI is gone.
func Stop(ctx context.Context, api *harvesterapi.API, m *machine.Machine) error {
	log.Infof("%s: stopping", m.Name)
	if _, _, err := setRunStrategy(ctx, api, m, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	_, err := m.WaitVMI(ctx, api, "", "to stop", machine.NoVMI)
	return err
}

// Kill halts the VM and deletes its VMI without grace period, then waits
// until the VMI is gone.
func Kill(ctx context.Context, api *harvesterapi.API, m *machine.Machine) error {
	log.Infof("%s: killing", m.Name)
	if _, _, err := setRunStrategy(ctx, api, m, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	vmi, err := m.GetVMI(ctx, api)
	if err != nil {
		return err
	}
	if vmi != nil {
		zero := int64(0)
		if err := api.DeleteVMI(ctx, m.Config.VMNamespace, m.Name, vmi.UID, &zero); err != nil {
			return err
		}
	}
	_, err = m.WaitVMI(ctx, api, "", "to be killed", machine.NoVMI)
	return err
}

// Restart deletes the running VMI and waits until a new one (new UID) runs
// with an address; a stopped machine is started. It runs the VM with
// strategy Always meanwhile and then restores the strategy it found,
// whether the restart succeeded or not.
func Restart(ctx context.Context, api *harvesterapi.API, m *machine.Machine) (err error) {
	if _, err := m.OwnVM(ctx, api); err != nil {
		return err
	}
	vmi, err := m.GetVMI(ctx, api)
	if err != nil {
		return err
	}
	if vmi == nil {
		return Start(ctx, api, m)
	}
	log.Infof("%s: restarting (VM instance %s)", m.Name, vmi.UID)
	// With Always the controller re-creates a deleted VMI whatever way it
	// ended.
	found, runsFrom, err := setRunStrategy(ctx, api, m, kubevirtv1.RunStrategyAlways)
	if err != nil {
		return err
	}
	defer func() { err = restoreRunStrategy(ctx, api, m, found, err) }()
	if err := api.DeleteVMI(ctx, m.Config.VMNamespace, m.Name, vmi.UID, nil); err != nil {
		return err
	}
	_, err = m.WaitRunning(ctx, api, "", runsFrom, "to run again with a new instance", machine.NewRunningVMI(string(vmi.UID)))
	return err
}

// restoreRunStrategy puts back the run strategy a restart found (the
// machine's usual RerunOnFailure when none was set) and joins its error to
// the restart's.
func restoreRunStrategy(parent context.Context, api *harvesterapi.API, m *machine.Machine, found *kubevirtv1.VirtualMachineRunStrategy, restartErr error) error {
	rs := kubevirtv1.RunStrategyRerunOnFailure
	if found != nil {
		rs = *found
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), restoreTimeout)
	defer cancel()
	_, _, err := setRunStrategy(ctx, api, m, rs)
	switch {
	case err == nil:
		if restartErr != nil {
			log.Infof("%s: restart failed; run strategy restored to %s", m.Name, rs)
		}
		return restartErr
	case restartErr == nil:
		return err
	}
	return fmt.Errorf("%w; restoring run strategy %s also failed: %w", restartErr, rs, err)
}
