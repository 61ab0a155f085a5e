package harvesterapi

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func (a *API) GetVM(ctx context.Context, ns, name string) (*kubevirtv1.VirtualMachine, error) {
	obj, err := do(ctx, a, "get VM "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindVM, ns, name, err)
}

func (a *API) CreateVM(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	a.seen.created(KindVM, vm.Namespace, vm.Name)
	return do(ctx, a, "create VM "+ref(vm.Namespace, vm.Name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(vm.Namespace).Create(c, vm, metav1.CreateOptions{})
	})
}

// UpdateVM changes the VM with mutate (retrying on conflicts); purpose
// names the change in the error.
func (a *API) UpdateVM(ctx context.Context, ns, name, purpose string, mutate func(*kubevirtv1.VirtualMachine) (bool, error)) error {
	vms := a.kube.VirtualMachines(ns)
	get := func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return vms.Get(c, name, metav1.GetOptions{})
	}
	put := func(c context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
		return vms.Update(c, vm, metav1.UpdateOptions{})
	}
	a.seen.forgetMachine()
	return update(ctx, a, purpose+" (update VM "+ref(ns, name)+")", get, mutate, put)
}

// PatchVMAnnotations sets annotations on the VM of that UID with one merge
// patch (the UID in the patch makes it fail on any other VM of the name)
// and returns the patched VM.
func (a *API) PatchVMAnnotations(ctx context.Context, ns, name string, uid types.UID, annotations map[string]string) (*kubevirtv1.VirtualMachine, error) {
	a.seen.forgetMachine()
	patch, err := metaPatch(uid, map[string]any{"annotations": annotations})
	if err != nil {
		return nil, err
	}
	return do(ctx, a, "annotate VM "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(ns).Patch(c, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
}

// metaPatch is a JSON merge patch of metadata fields that applies only to
// the object of that UID.
func metaPatch(uid types.UID, fields map[string]any) ([]byte, error) {
	meta := map[string]any{"uid": uid}
	for k, v := range fields {
		meta[k] = v
	}
	b, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	return b, nil
}

func (a *API) DeleteVM(ctx context.Context, ns, name string, uid types.UID) error {
	a.seen.forgetMachine()
	return remove(ctx, a, KindVM, ns, name, uid, nil, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.VirtualMachines(ns).Delete(c, name, o)
	})
}

// StartVM sets spec.runStrategy (and annotations, when given) of the VM of
// that UID with one merge patch, and returns the VM as patched.
func (a *API) StartVM(ctx context.Context, ns, name string, uid types.UID, rs kubevirtv1.VirtualMachineRunStrategy, annotations map[string]string) (*kubevirtv1.VirtualMachine, error) {
	a.seen.forgetMachine()
	meta := map[string]any{"uid": uid}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta, "spec": map[string]any{"runStrategy": rs}})
	if err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	return do(ctx, a, "start VM "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(ns).Patch(c, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
}
