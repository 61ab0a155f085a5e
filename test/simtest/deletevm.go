package simtest

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// DeleteVM deletes VM namespace/name and waits until it and its VMI are
// gone (NotFound is done), so that what comes next on the same simulator
// does not meet them.
func DeleteVM(ctx context.Context, vc kubevirt.Interface, namespace, name string) error {
	vms := vc.KubevirtV1().VirtualMachines(namespace)
	vm, err := vms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete VM %s/%s: %w", namespace, name, err)
	}
	if err := vms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete VM %s/%s: %w", namespace, name, err)
	}
	vmis := kubeapi.KindOf[*kubevirtv1.VirtualMachineInstanceList]("VMI", &kubevirtv1.VirtualMachineInstance{}, vc.KubevirtV1().VirtualMachineInstances(namespace))
	if _, err := kubeapi.Wait(ctx, vmis, namespace, name, 0, func(v *kubevirtv1.VirtualMachineInstance) (bool, error) { return v == nil, nil }); err != nil {
		return fmt.Errorf("delete VM %s/%s: its VMI: %w", namespace, name, err)
	}
	k := kubeapi.KindOf[*kubevirtv1.VirtualMachineList]("VM", &kubevirtv1.VirtualMachine{}, vms)
	if _, err := kubeapi.Wait(ctx, k, namespace, name, 0, func(v *kubevirtv1.VirtualMachine) (bool, error) { return v == nil || v.UID != vm.UID, nil }); err != nil {
		return fmt.Errorf("delete VM %s/%s: %w", namespace, name, err)
	}
	return nil
}
