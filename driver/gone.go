package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/rancher/machine/libmachine/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// listWatchFuncs lists and watches one kind of object in a namespace.
type listWatchFuncs struct {
	kind  string
	obj   runtime.Object
	list  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// typedClient is the List/Watch half of a typed client of one kind.
type typedClient[L runtime.Object] interface {
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

func kindFuncs[L runtime.Object](kind string, obj runtime.Object, c typedClient[L]) listWatchFuncs {
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
	return listWatchFuncs{kind: kind, obj: obj, list: list, watch: c.Watch}
}

// namedListWatch lists and watches the one object called name; lists go
// through api.call (per-call deadline, credential errors explained).
func namedListWatch(ctx context.Context, api *harvesterAPI, name string, f listWatchFuncs) *cache.ListWatch {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			var out runtime.Object
			err := api.call(ctx, func(c context.Context) error {
				var err error
				out, err = f.list(c, o)
				return err
			})
			return out, err
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return f.watch(ctx, o)
		},
	}
}

// waitRemoved waits, with watches, until the VM, its VMI, the listed PVCs
// and the Secret no longer exist.
func (d *Driver) waitRemoved(ctx context.Context, api *harvesterAPI, secret string, claims []string) error {
	ns := d.VMNamespace
	v := api.virt.KubevirtV1()
	core := api.kube.CoreV1()
	vm := kindFuncs[*kubevirtv1.VirtualMachineList]("VM", &kubevirtv1.VirtualMachine{}, v.VirtualMachines(ns))
	vmi := kindFuncs[*kubevirtv1.VirtualMachineInstanceList]("VMI", &kubevirtv1.VirtualMachineInstance{}, v.VirtualMachineInstances(ns))
	pvc := kindFuncs[*corev1.PersistentVolumeClaimList]("volume", &corev1.PersistentVolumeClaim{}, core.PersistentVolumeClaims(ns))
	sec := kindFuncs[*corev1.SecretList]("Secret", &corev1.Secret{}, core.Secrets(ns))

	targets := []struct {
		lw   listWatchFuncs
		name string
	}{{vm, d.MachineName}, {vmi, d.MachineName}, {sec, secret}}
	for _, c := range claims {
		targets = append(targets, struct {
			lw   listWatchFuncs
			name string
		}{pvc, c})
	}
	for _, t := range targets {
		if err := d.waitGone(ctx, api, t.lw, t.name); err != nil {
			return err
		}
	}
	log.Infof("%s: VM, volumes and cloud-init Secret are gone", d.MachineName)
	return nil
}

func (d *Driver) waitGone(ctx context.Context, api *harvesterAPI, f listWatchFuncs, name string) error {
	lw := namedListWatch(ctx, api, name, f)
	var last runtime.Object
	precondition := func(store cache.Store) (bool, error) {
		obj, exists, err := store.GetByKey(d.VMNamespace + "/" + name)
		last = nil
		if exists {
			last = obj.(runtime.Object)
		}
		return !exists, err
	}
	_, err := watchtools.UntilWithSync(ctx, lw, f.obj, precondition, func(ev watch.Event) (bool, error) {
		last = ev.Object
		return ev.Type == watch.Deleted, nil
	})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
		detail := ""
		if m, ok := last.(metav1.Object); ok && m != nil {
			detail = fmt.Sprintf(" (deletion requested: %v, finalizers: %v)", m.GetDeletionTimestamp() != nil, m.GetFinalizers())
		}
		return fmt.Errorf("timed out after %s waiting for %s %s/%s to be deleted%s", d.waitTimeout(), f.kind, d.VMNamespace, name, detail)
	}
	return apiError(fmt.Sprintf("watch %s %s/%s", f.kind, d.VMNamespace, name), err)
}
