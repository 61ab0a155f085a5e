package driver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	watchtools "k8s.io/client-go/tools/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Kinds of objects removeMachine waits for.
const (
	kindVM     = "VM"
	kindVMI    = "VMI"
	kindPVC    = "volume"
	kindSecret = "Secret"
)

// goneTarget is one object to wait for: gone when no object of that name
// exists or the one there has another UID (uid "" matches any).
type goneTarget struct {
	kind, name string
	uid        types.UID
}

// waitRemoved waits, with watches, until every target is gone.
func (d *Driver) waitRemoved(ctx context.Context, api *harvesterAPI, targets []goneTarget) error {
	ns := d.VMNamespace
	k := api.kube
	kinds := map[string]kubeapi.Kind{
		kindVM:     kubeapi.KindOf[*kubevirtv1.VirtualMachineList](kindVM, &kubevirtv1.VirtualMachine{}, k.VirtualMachines(ns)),
		kindVMI:    kubeapi.KindOf[*kubevirtv1.VirtualMachineInstanceList](kindVMI, &kubevirtv1.VirtualMachineInstance{}, k.VirtualMachineInstances(ns)),
		kindPVC:    kubeapi.KindOf[*corev1.PersistentVolumeClaimList](kindPVC, &corev1.PersistentVolumeClaim{}, k.PersistentVolumeClaims(ns)),
		kindSecret: kubeapi.KindOf[*corev1.SecretList](kindSecret, &corev1.Secret{}, k.Secrets(ns)),
	}
	for _, t := range targets {
		if err := d.waitGone(ctx, api, kinds[t.kind], t.name, t.uid); err != nil {
			return err
		}
	}
	return nil
}

func (d *Driver) waitGone(ctx context.Context, api *harvesterAPI, k kubeapi.Kind, name string, uid types.UID) error {
	var last runtime.Object
	_, err := kubeapi.Wait(ctx, k, d.VMNamespace, name, api.timeout, func(obj runtime.Object) (bool, error) {
		m, ok := obj.(metav1.Object)
		if obj == nil || !ok || (uid != "" && m.GetUID() != uid) {
			return true, nil
		}
		last = obj
		return false, nil
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
