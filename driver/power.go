package driver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rancher/machine/libmachine/state"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/power"
	"github.com/harvester-kit/harvester-machine/driver/staticaddr"
)

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
	m := d.newMachine()
	vm, err := m.CurrentVM(ctx, api)
	if err != nil {
		return state.Error, err
	}
	if vm == nil {
		return state.None, d.machineGone()
	}
	vmi, err := m.CurrentVMI(ctx, api)
	if err != nil {
		return state.Error, err
	}
	return power.StateOf(vmi), nil
}

// GetIP returns the address of the machine's running VMI: its first usable
// IPv4 address, or its IPv6 address when it has none (rancher-machine's
// commands that use only GetIP work for IPv6-only guests too).
// A machine holding a static address reports that address as soon as the
// guest reports it on the NIC that holds it.
func (d *Driver) GetIP() (string, error) {
	if held, err := netip.ParseAddr(d.HeldAddress); err == nil {
		return d.vmiAddress(held.String()+" on "+d.HeldInterface, func(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool) {
			return held.String(), staticaddr.NICReports(ifaces, d.HeldInterface, held)
		})
	}
	return d.vmiAddress("an address", machine.SelectAddress)
}

// GetIPv6 returns the first usable IPv6 address (global, not link-local) of
// the machine's running VMI; rancher-machine asks for it when GetIP fails.
func (d *Driver) GetIPv6() (string, error) {
	return d.vmiAddress("an IPv6 address", machine.SelectIPv6)
}

// vmiAddress reads the machine's VMI and picks an address with selectAddr.
func (d *Driver) vmiAddress(what string, selectAddr func([]kubevirtv1.VirtualMachineInstanceNetworkInterface) (string, bool)) (string, error) {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return "", err
	}
	vmi, err := d.newMachine().CurrentVMI(ctx, api)
	if err != nil {
		return "", err
	}
	if vmi == nil {
		return "", fmt.Errorf("VM %s/%s is not running: it has no VM instance", d.VMNamespace, d.MachineName)
	}
	addr, ok := selectAddr(vmi.Status.Interfaces)
	if !ok {
		return "", fmt.Errorf("VM %s/%s has no %s yet (%s)", d.VMNamespace, d.MachineName, what, machine.DescribeVMI(vmi))
	}
	return addr, nil
}

// Start sets the run strategy to RerunOnFailure and waits until the VM runs
// with an address.
func (d *Driver) Start() error { return d.withPower(power.Start) }

// Stop halts the VM (run strategy Halted) and waits until its VMI is gone.
func (d *Driver) Stop() error { return d.withPower(power.Stop) }

// Kill halts the VM and deletes its VMI without grace period, then waits
// until the VMI is gone.
func (d *Driver) Kill() error { return d.withPower(power.Kill) }

// Restart deletes the running VMI and waits until a new one (new UID) runs
// with an address; a stopped machine is started. It runs the VM with
// strategy Always meanwhile and then restores the strategy it found,
// whether the restart succeeded or not.
func (d *Driver) Restart() error { return d.withPower(power.Restart) }

// withPower runs op on the machine's VM once the session is confirmed.
func (d *Driver) withPower(op func(context.Context, *harvesterapi.API, *machine.Machine) error) error {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return err
	}
	return op(ctx, api, d.newMachine())
}
