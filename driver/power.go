package driver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rancher/machine/libmachine/state"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// restoreTimeout bounds putting back the run strategy after a failed restart.
const restoreTimeout = time.Minute

// getVMI returns the machine's VMI, nil when there is none, or an error
// wrapping ErrNotOwned when the VMI of that name is not the machine's.
func (d *Driver) getVMI(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi, err := api.GetVMI(ctx, d.VMNamespace, d.MachineName)
	vmi, err = harvesterapi.Absent(d.MachineName, vmi, err)
	if err != nil || vmi == nil {
		return nil, err
	}
	if err := d.checkOwned("VMI", d.MachineName, vmi); err != nil {
		return nil, err
	}
	return vmi, nil
}

// currentVMI is the machine's VMI as this process last saw it, when
// fresh (Create's wait just saw it), else as read now.
func (d *Driver) currentVMI(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachineInstance, error) {
	if vmi := api.Seen().FreshVMI(d.VMNamespace, d.MachineName); vmi != nil {
		return vmi, nil
	}
	return d.getVMI(ctx, api)
}

// GetState maps the VMI to a machine state (no VMI: Stopped). A VM missing
// on the machine's cluster is an error that says "not found" (rancher-machine
// reports the machine as gone); no other error says it (see keepMachine); a
// VM of the machine's name that is not the machine's is an error that says
// so.
func (d *Driver) GetState() (state.State, error) {
	st, err := d.getState()
	if err != nil && !errors.Is(err, errMachineGone) {
		err = keepMachine(err)
	}
	return st, err
}

func (d *Driver) getState() (state.State, error) {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return state.Error, err
	}
	vm, err := d.currentVM(ctx, api)
	if err != nil {
		return state.Error, err
	}
	if vm == nil {
		return state.None, d.machineGone()
	}
	vmi, err := d.currentVMI(ctx, api)
	if err != nil {
		return state.Error, err
	}
	return StateOf(vmi), nil
}

// GetIP returns the address of the machine's running VMI: its first usable
// IPv4 address, or its IPv6 address when it has none (rancher-machine's
// commands that use only GetIP work for IPv6-only guests too).
// A machine holding a static address reports that address as soon as the
// guest reports it on the NIC that holds it.
func (d *Driver) GetIP() (string, error) {
	if held, err := netip.ParseAddr(d.HeldAddress); err == nil {
		return d.vmiAddress(held.String()+" on "+d.HeldInterface, func(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool) {
			return held.String(), nicReports(ifaces, d.HeldInterface, held)
		})
	}
	return d.vmiAddress("an address", SelectAddress)
}

// GetIPv6 returns the first usable IPv6 address (global, not link-local) of
// the machine's running VMI; rancher-machine asks for it when GetIP fails.
func (d *Driver) GetIPv6() (string, error) {
	return d.vmiAddress("an IPv6 address", SelectIPv6)
}

// vmiAddress reads the machine's VMI and picks an address with selectAddr.
func (d *Driver) vmiAddress(what string, selectAddr func([]kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool)) (string, error) {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return "", err
	}
	vmi, err := d.currentVMI(ctx, api)
	if err != nil {
		return "", err
	}
	if vmi == nil {
		return "", fmt.Errorf("VM %s/%s is not running: it has no VM instance", d.VMNamespace, d.MachineName)
	}
	addr, ok := selectAddr(vmi.Status.Interfaces)
	if !ok {
		return "", fmt.Errorf("VM %s/%s has no %s yet (%s)", d.VMNamespace, d.MachineName, what, describeVMI(vmi))
	}
	return addr, nil
}

// setRunStrategy updates spec.runStrategy of the machine's own VM, retrying
// on conflicts, and returns the strategy it replaced (nil: none set).
func (d *Driver) setRunStrategy(ctx context.Context, api *harvesterapi.API, rs kubevirtv1.VirtualMachineRunStrategy) (*kubevirtv1.VirtualMachineRunStrategy, error) {
	var previous *kubevirtv1.VirtualMachineRunStrategy
	err := api.UpdateVM(ctx, d.VMNamespace, d.MachineName, "set run strategy "+string(rs), func(vm *kubevirtv1.VirtualMachine) (bool, error) {
		if err := d.checkOwned("VM", d.MachineName, vm); err != nil {
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
func (d *Driver) Start() error {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return err
	}
	log.Infof("%s: starting", d.MachineName)
	if _, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyRerunOnFailure); err != nil {
		return err
	}
	_, err = d.waitVMI(ctx, api, "", "to run and report an address", runningWithAddress)
	return err
}

// Stop halts the VM (run strategy Halted) and waits until its VMI is gone.
func (d *Driver) Stop() error {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return err
	}
	log.Infof("%s: stopping", d.MachineName)
	if _, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	_, err = d.waitVMI(ctx, api, "", "to stop", noVMI)
	return err
}

// Kill halts the VM and deletes its VMI without grace period, then waits
// until the VMI is gone.
func (d *Driver) Kill() error {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return err
	}
	log.Infof("%s: killing", d.MachineName)
	if _, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	vmi, err := d.getVMI(ctx, api)
	if err != nil {
		return err
	}
	if vmi != nil {
		zero := int64(0)
		if err := api.DeleteVMI(ctx, d.VMNamespace, d.MachineName, vmi.UID, &zero); err != nil {
			return err
		}
	}
	_, err = d.waitVMI(ctx, api, "", "to be killed", noVMI)
	return err
}

// Restart deletes the running VMI and waits until a new one (new UID) runs
// with an address; a stopped machine is started. It runs the VM with
// strategy Always meanwhile and then restores the strategy it found,
// whether the restart succeeded or not.
func (d *Driver) Restart() (err error) {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return err
	}
	if _, err := d.ownVM(ctx, api); err != nil {
		return err
	}
	vmi, err := d.getVMI(ctx, api)
	if err != nil {
		return err
	}
	if vmi == nil {
		return d.Start()
	}
	log.Infof("%s: restarting (VM instance %s)", d.MachineName, vmi.UID)
	// With Always the controller re-creates a deleted VMI whatever way it
	// ended.
	found, err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyAlways)
	if err != nil {
		return err
	}
	defer func() { err = d.restoreRunStrategy(api, found, err) }()
	if err := api.DeleteVMI(ctx, d.VMNamespace, d.MachineName, vmi.UID, nil); err != nil {
		return err
	}
	_, err = d.waitVMI(ctx, api, "", "to run again with a new instance", newRunningVMI(string(vmi.UID)))
	return err
}

// restoreRunStrategy puts back the run strategy a restart found (the
// machine's usual RerunOnFailure when none was set) and joins its error to
// the restart's.
func (d *Driver) restoreRunStrategy(api *harvesterapi.API, found *kubevirtv1.VirtualMachineRunStrategy, restartErr error) error {
	rs := kubevirtv1.RunStrategyRerunOnFailure
	if found != nil {
		rs = *found
	}
	ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
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
