// Package machine is the driver's view of one machine on its Harvester
// cluster: who it is (its config, IDs and held address), which objects are
// its own, and the waits on its VM instance. The concern packages (static
// addresses, capacity, removal, power) work through it.
package machine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
)

// Held is the address the machine holds on its NIC HeldInterface
// (--harvester-static-address-range or managed DHCP), once held, with the
// claim (ConfigMap) that holds a static one. The driver stores it.
type Held struct {
	HeldAddress   string
	HeldInterface string
	HeldClaim     string
	HeldClaimUID  string
}

// Machine is one machine: the driver's stored state, shared (the pointers
// point into the driver), and this command's facts.
type Machine struct {
	*config.Config
	*Ownership
	*Held
	MachineName string
	// SecretPending: this process created the VM before its cloud-init
	// Secret (static addresses), and the Secret is not made yet.
	SecretPending bool
}

// OwnVM returns the machine's VM, nil when there is none, or an error
// wrapping ErrNotOwned when the VM of that name is not the machine's.
func (d *Machine) OwnVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	vm, err := api.GetVM(ctx, d.VMNamespace, d.MachineName)
	vm, err = harvesterapi.Absent(d.MachineName, vm, err)
	if err != nil || vm == nil {
		return nil, err
	}
	return d.CheckOwnVM(vm)
}

// CurrentVM is the machine's VM as this process last saw it, when fresh
// (Create just made it and watched it), else as read now (see ownVM).
func (d *Machine) CurrentVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	if vm := api.Seen().FreshVM(d.VMNamespace, d.MachineName); vm != nil {
		return d.CheckOwnVM(vm)
	}
	return d.OwnVM(ctx, api)
}

func (d *Machine) CheckOwnVM(vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	if err := d.CheckOwned("VM", d.MachineName, vm); err != nil {
		return nil, err
	}
	return vm, nil
}

// OwnSecret returns the Secret called name if it is the machine's, nil if
// there is none, or an error wrapping ErrNotOwned.
func (d *Machine) OwnSecret(ctx context.Context, api *harvesterapi.API, name string) (*corev1.Secret, error) {
	s, err := api.GetSecret(ctx, d.VMNamespace, name)
	s, err = harvesterapi.Absent(name, s, err)
	if err != nil || s == nil {
		return nil, err
	}
	if err := d.CheckOwned("Secret", d.MachineName, s); err != nil {
		return nil, err
	}
	return s, nil
}

// GetVMI returns the machine's VMI, nil when there is none, or an error
// wrapping ErrNotOwned when the VMI of that name is not the machine's.
func (d *Machine) GetVMI(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi, err := api.GetVMI(ctx, d.VMNamespace, d.MachineName)
	vmi, err = harvesterapi.Absent(d.MachineName, vmi, err)
	if err != nil || vmi == nil {
		return nil, err
	}
	if err := d.CheckOwned("VMI", d.MachineName, vmi); err != nil {
		return nil, err
	}
	return vmi, nil
}

// CurrentVMI is the machine's VMI as this process last saw it, when
// fresh (Create's wait just saw it), else as read now.
func (d *Machine) CurrentVMI(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachineInstance, error) {
	if vmi := api.Seen().FreshVMI(d.VMNamespace, d.MachineName); vmi != nil {
		return vmi, nil
	}
	return d.GetVMI(ctx, api)
}
