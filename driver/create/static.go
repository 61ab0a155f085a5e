package create

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/staticaddr"
)

// withStaticAddress makes a machine that holds a static address: before
// anything is created it checks that the range has a free address; it
// creates the VM halted, holds an address with a claim the VM owns,
// creates the cloud-init Secret (owned by the VM too) with the network
// data of that address, and only then starts the VM. A failure after the
// VM exists removes the VM, and garbage collection the rest.
func (f flow) withStaticAddress(ctx context.Context, b built, s *staticaddr.Plan) (made, error) {
	free, err := staticaddr.FreeAddresses(ctx, f.api, f.m, s)
	if err != nil {
		return made{}, err
	}
	halted := kubevirtv1.RunStrategyHalted
	b.vm.Spec.RunStrategy = &halted
	f.m.SecretPending = true
	vm, err := f.vm(ctx, b)
	if err != nil {
		return made{}, err
	}
	if err := staticaddr.ClaimAddress(ctx, f.api, f.m, s, free, vm); err != nil {
		return made{}, err
	}
	data, err := s.NetworkData(f.m.Config.NetworkData)
	if err != nil {
		return made{}, err
	}
	b.secret.Data["networkdata"] = data
	b.secret.OwnerReferences = []metav1.OwnerReference{machine.VMOwnerReference(vm)}
	secret, err := f.secret(ctx, b.secret)
	if err != nil {
		return made{}, err
	}
	f.m.SecretPending = false
	started, err := f.api.StartVM(ctx, f.m.Config.VMNamespace, vm.Name, vm.UID, b.plan.RunStrategy, s.Annotations())
	if err != nil {
		return made{}, err
	}
	return made{secret: secret, vm: vm, runsFrom: started.Generation}, nil
}
