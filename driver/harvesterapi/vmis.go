package harvesterapi

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

func (a *API) GetVMI(ctx context.Context, ns, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	obj, err := do(ctx, a, "get VMI "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachineInstance, error) {
		return a.kube.VirtualMachineInstances(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindVMI, ns, name, err)
}

// ReadVMIForWait reads the VMI ns/name, nil when there is none, with a
// watch that streams its state and stays open: the process's next wait
// for that VMI (TakeVMIStream) goes on from it, so the read and the wait
// are one request. Where the server does not stream it gets the VMI, and
// the wait watches on its own.
func (a *API) ReadVMIForWait(ctx context.Context, ns, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	if a.unreachable == nil {
		initial := a.streamTimeout()
		s, err := kubeapi.OpenNamedStream(context.WithoutCancel(ctx), a.VMIs(ns), name, initial)
		if err == nil {
			a.seen.holdVMIStream(ns, name, s)
			for _, it := range s.Items {
				if vmi, ok := it.(*kubevirtv1.VirtualMachineInstance); ok {
					return vmi, nil
				}
			}
			a.seen.sawAbsent(KindVMI, ns, name)
			return nil, nil
		}
		if err := a.Explain("watch VMI "+ref(ns, name), err); !errors.Is(err, kubeapi.ErrWatchEnded) {
			a.noteUnreachable(err)
			return nil, err
		}
	}
	vmi, err := a.GetVMI(ctx, ns, name)
	return Absent(name, vmi, err)
}

// DeleteVMI deletes the VMI of that UID (grace nil: the default period).
func (a *API) DeleteVMI(ctx context.Context, ns, name string, uid types.UID, grace *int64) error {
	a.seen.forgetMachine()
	return remove(ctx, a, KindVMI, ns, name, uid, grace, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.VirtualMachineInstances(ns).Delete(c, name, o)
	})
}

// PatchVMIFinalizers applies a JSON patch of the VMI's finalizers, built
// with test operations so that it applies only to the VMI and finalizer
// list it was made for (else 422 Invalid).
func (a *API) PatchVMIFinalizers(ctx context.Context, ns, name string, patch []byte) error {
	a.seen.forgetMachine()
	_, err := do(ctx, a, "release finalizer of VMI "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachineInstance, error) {
		return a.kube.VirtualMachineInstances(ns).Patch(c, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	})
	return err
}

// ListVMIs lists the VM instances of a namespace matching a label
// selector.
func (a *API) ListVMIs(ctx context.Context, ns, selector string) ([]kubevirtv1.VirtualMachineInstance, error) {
	list, err := do(ctx, a, "list VMIs in "+ns+" labelled "+selector, func(c context.Context) (*kubevirtv1.VirtualMachineInstanceList, error) {
		return a.kube.VirtualMachineInstances(ns).List(c, metav1.ListOptions{LabelSelector: selector})
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}
