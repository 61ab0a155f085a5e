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

// Machine is one machine, built once per libmachine call from the
// driver's stored state and passed by hand to the flow and the concern
// packages. What a flow learns (the VM's UID, the held address, the
// pending Secret) it records in the value; the driver stores it back.
type Machine struct {
	Config    config.Config
	Ownership Ownership
	Held      Held
	Name      string
	// SecretPending: this process created the VM before its cloud-init
	// Secret (static addresses), and the Secret is not made yet.
	SecretPending bool
}

// OwnVM returns the machine's VM, nil when there is none, or an error
// wrapping ErrNotOwned when the VM of that name is not the machine's.
func (m *Machine) OwnVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	vm, err := api.GetVM(ctx, m.Config.VMNamespace, m.Name)
	vm, err = harvesterapi.Absent(m.Name, vm, err)
	if err != nil || vm == nil {
		return nil, err
	}
	return m.CheckOwnVM(vm)
}

// CurrentVM is the machine's VM as this process last saw it, when fresh
// (Create just made it and watched it), else as read now (see ownVM).
func (m *Machine) CurrentVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	if vm := api.Seen().FreshVM(m.Config.VMNamespace, m.Name); vm != nil {
		return m.CheckOwnVM(vm)
	}
	return m.OwnVM(ctx, api)
}

// CheckOwnVM returns vm when it is the machine's, else an error wrapping
// ErrNotOwned.
func (m *Machine) CheckOwnVM(vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	if err := m.Ownership.CheckOwned("VM", m.Name, vm); err != nil {
		return nil, err
	}
	return vm, nil
}

// OwnSecret returns the Secret called name if it is the machine's, nil if
// there is none, or an error wrapping ErrNotOwned.
func (m *Machine) OwnSecret(ctx context.Context, api *harvesterapi.API, name string) (*corev1.Secret, error) {
	s, err := api.GetSecret(ctx, m.Config.VMNamespace, name)
	s, err = harvesterapi.Absent(name, s, err)
	if err != nil || s == nil {
		return nil, err
	}
	if err := m.Ownership.CheckOwned("Secret", m.Name, s); err != nil {
		return nil, err
	}
	return s, nil
}

// GetVMI returns the machine's VMI, nil when there is none, or an error
// wrapping ErrNotOwned when the VMI of that name is not the machine's.
func (m *Machine) GetVMI(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi, err := api.GetVMI(ctx, m.Config.VMNamespace, m.Name)
	vmi, err = harvesterapi.Absent(m.Name, vmi, err)
	if err != nil || vmi == nil {
		return nil, err
	}
	if err := m.Ownership.CheckOwned("VMI", m.Name, vmi); err != nil {
		return nil, err
	}
	return vmi, nil
}

// CurrentVMI is the machine's VMI as this process last saw it, when
// fresh (Create's wait just saw it), else as read now.
func (m *Machine) CurrentVMI(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachineInstance, error) {
	if vmi := api.Seen().FreshVMI(m.Config.VMNamespace, m.Name); vmi != nil {
		return vmi, nil
	}
	return m.GetVMI(ctx, api)
}
