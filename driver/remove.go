package driver

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/removal"
)

// Remove deletes what this machine created and nothing else: its VM (only
// if it carries the machine's ID and, once recorded, the VM's UID), its
// volumes (found from the VM and by label, so a VM deleted by hand leaves no
// disk behind; hot-plug disks stay; every volume of the guest cluster when
// the VM is annotated harvesterhci.io/removeAllPersistentVolumeClaims=true)
// and its cloud-init Secret, and waits until they are gone. Another object
// of the machine's name is left alone with an error, and nothing is
// deleted. A machine already gone is success, on the right cluster only;
// no error says "not found" (see keepMachine). A server that cannot be
// reached ends the command at the first failed call.
func (d *Driver) Remove() error {
	return keepMachine(d.remove())
}

func (d *Driver) remove() error {
	ctx := context.Background()
	api, err := d.client()
	if err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	endFailFast := api.FailFast()
	vm, err := d.confirmByVM(ctx, api)
	if unreachable := endFailFast(); unreachable != nil {
		return fmt.Errorf("remove: %w", unreachable)
	}
	if err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return removal.RemoveMachineOf(ctx, api, d.newMachine(), vm)
}

// confirmByVM confirms the cluster by the VM of the recorded UID when it
// is there (a UID is never reused, on any cluster): one read that Remove
// needs anyway. Otherwise the session confirms the cluster as for every
// command.
// It returns that VM when it read it (nil otherwise).
func (d *Driver) confirmByVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	if !d.cmd.confirmed && d.VMUID != "" {
		vm, err := api.GetVM(ctx, d.VMNamespace, d.MachineName)
		vm, err = harvesterapi.Absent(d.MachineName, vm, err)
		if err != nil && harvesterapi.IsTerminal(err) {
			return nil, err
		}
		if vm != nil && string(vm.UID) == d.VMUID {
			d.confirmed()
			return vm, nil
		}
	}
	_, err := d.session(ctx)
	return nil, err
}
