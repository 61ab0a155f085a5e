package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/rancher/machine/libmachine/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	watchtools "k8s.io/client-go/tools/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// waitRemoved waits, with watches, until the VM, its VMI, the listed PVCs
// and the Secret no longer exist.
func (d *Driver) waitRemoved(ctx context.Context, api *harvesterAPI, secret string, claims []string) error {
	ns := d.VMNamespace
	v := api.virt.KubevirtV1()
	core := api.kube.CoreV1()
	vm := kubeapi.KindOf[*kubevirtv1.VirtualMachineList]("VM", &kubevirtv1.VirtualMachine{}, v.VirtualMachines(ns))
	vmi := kubeapi.KindOf[*kubevirtv1.VirtualMachineInstanceList]("VMI", &kubevirtv1.VirtualMachineInstance{}, v.VirtualMachineInstances(ns))
	pvc := kubeapi.KindOf[*corev1.PersistentVolumeClaimList]("volume", &corev1.PersistentVolumeClaim{}, core.PersistentVolumeClaims(ns))
	sec := kubeapi.KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, core.Secrets(ns))

	type target struct {
		lw   kubeapi.Kind
		name string
	}
	targets := []target{{vm, d.MachineName}, {vmi, d.MachineName}, {sec, secret}}
	for _, c := range claims {
		targets = append(targets, target{pvc, c})
	}
	for _, t := range targets {
		if err := d.waitGone(ctx, api, t.lw, t.name); err != nil {
			return err
		}
	}
	log.Infof("%s: VM, volumes and cloud-init Secret are gone", d.MachineName)
	return nil
}

func (d *Driver) waitGone(ctx context.Context, api *harvesterAPI, k kubeapi.Kind, name string) error {
	var last runtime.Object
	_, err := kubeapi.Wait(ctx, k, d.VMNamespace, name, api.timeout, func(obj runtime.Object) (bool, error) {
		if obj != nil {
			last = obj
		}
		return obj == nil, nil
	})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
		detail := ""
		if m, ok := last.(metav1.Object); ok && m != nil {
			detail = fmt.Sprintf(" (deletion requested: %v, finalizers: %v)", m.GetDeletionTimestamp() != nil, m.GetFinalizers())
		}
		return fmt.Errorf("timed out after %s waiting for %s %s/%s to be deleted%s", d.waitTimeout(), k.Name, d.VMNamespace, name, detail)
	}
	return apiError(fmt.Sprintf("watch %s %s/%s", k.Name, d.VMNamespace, name), err)
}
