package driver

import (
	"context"
	"fmt"

	"github.com/rancher/machine/libmachine/log"
	"github.com/rancher/machine/libmachine/state"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// getVMI returns the machine's VMI, or nil when there is none.
func (d *Driver) getVMI(ctx context.Context, api *harvesterAPI) (*kubevirtv1.VirtualMachineInstance, error) {
	var vmi *kubevirtv1.VirtualMachineInstance
	err := api.call(ctx, func(c context.Context) error {
		var err error
		vmi, err = api.virt.KubevirtV1().VirtualMachineInstances(d.VMNamespace).Get(c, d.MachineName, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apiError("get VMI "+d.MachineName, err)
	}
	return vmi, nil
}

// GetState maps the VMI to a machine state (no VMI: Stopped). A missing VM
// is an error that says "not found".
func (d *Driver) GetState() (state.State, error) {
	api, err := d.client()
	if err != nil {
		return state.Error, err
	}
	ctx := context.Background()
	err = api.call(ctx, func(c context.Context) error {
		_, err := api.virt.KubevirtV1().VirtualMachines(d.VMNamespace).Get(c, d.MachineName, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return state.None, fmt.Errorf("VM %s/%s not found", d.VMNamespace, d.MachineName)
	}
	if err != nil {
		return state.Error, apiError("get VM "+d.MachineName, err)
	}
	vmi, err := d.getVMI(ctx, api)
	if err != nil {
		return state.Error, err
	}
	return StateOf(vmi), nil
}

// GetIP returns the first usable address of the running VMI.
func (d *Driver) GetIP() (string, error) {
	api, err := d.client()
	if err != nil {
		return "", err
	}
	vmi, err := d.getVMI(context.Background(), api)
	if err != nil {
		return "", err
	}
	if vmi == nil {
		return "", fmt.Errorf("VM %s/%s is not running: it has no VM instance", d.VMNamespace, d.MachineName)
	}
	addr, ok := SelectAddress(vmi.Status.Interfaces)
	if !ok {
		return "", fmt.Errorf("VM %s/%s has no address yet (%s)", d.VMNamespace, d.MachineName, describeVMI(vmi))
	}
	return addr, nil
}

// setRunStrategy updates spec.runStrategy, retrying on conflicts.
func (d *Driver) setRunStrategy(ctx context.Context, api *harvesterAPI, rs kubevirtv1.VirtualMachineRunStrategy) error {
	vms := api.virt.KubevirtV1().VirtualMachines(d.VMNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return api.call(ctx, func(c context.Context) error {
			vm, err := vms.Get(c, d.MachineName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == rs {
				return nil
			}
			vm.Spec.Running = nil
			vm.Spec.RunStrategy = &rs
			_, err = vms.Update(c, vm, metav1.UpdateOptions{})
			return err
		})
	})
	return apiError(fmt.Sprintf("set run strategy of VM %s to %s", d.MachineName, rs), err)
}

// Start sets the run strategy to RerunOnFailure and waits until the VM runs
// with an address.
func (d *Driver) Start() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	log.Infof("%s: starting", d.MachineName)
	if err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyRerunOnFailure); err != nil {
		return err
	}
	return d.waitVMI(ctx, api, "to run and report an address", runningWithAddress)
}

// Stop halts the VM (run strategy Halted) and waits until its VMI is gone.
func (d *Driver) Stop() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	log.Infof("%s: stopping", d.MachineName)
	if err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	return d.waitVMI(ctx, api, "to stop", noVMI)
}

// Kill halts the VM and deletes its VMI without grace period, then waits
// until the VMI is gone.
func (d *Driver) Kill() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	log.Infof("%s: killing", d.MachineName)
	if err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	zero := int64(0)
	err = api.call(ctx, func(c context.Context) error {
		return api.virt.KubevirtV1().VirtualMachineInstances(d.VMNamespace).Delete(c, d.MachineName, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return apiError("delete VMI "+d.MachineName, err)
	}
	return d.waitVMI(ctx, api, "to be killed", noVMI)
}

// Restart deletes the running VMI and waits until a new one (new UID) runs
// with an address. A stopped machine is started.
func (d *Driver) Restart() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	vmi, err := d.getVMI(ctx, api)
	if err != nil {
		return err
	}
	if vmi == nil {
		return d.Start()
	}
	log.Infof("%s: restarting (VM instance %s)", d.MachineName, vmi.UID)
	// With Always the controller re-creates a deleted VMI whatever way it
	// ended; the usual RerunOnFailure is restored once the new one runs.
	if err := d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyAlways); err != nil {
		return err
	}
	uid := vmi.UID
	err = api.call(ctx, func(c context.Context) error {
		return api.virt.KubevirtV1().VirtualMachineInstances(d.VMNamespace).Delete(c, d.MachineName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return apiError("delete VMI "+d.MachineName, err)
	}
	if err := d.waitVMI(ctx, api, "to run again with a new instance", newRunningVMI(string(uid))); err != nil {
		return err
	}
	return d.setRunStrategy(ctx, api, kubevirtv1.RunStrategyRerunOnFailure)
}
