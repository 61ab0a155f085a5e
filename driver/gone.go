package driver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
	v := api.virt.KubevirtV1()
	core := api.kube.CoreV1()
	funcs := map[string]listWatchFuncs{
		kindVM:     kindFuncs[*kubevirtv1.VirtualMachineList](kindVM, &kubevirtv1.VirtualMachine{}, v.VirtualMachines(ns)),
		kindVMI:    kindFuncs[*kubevirtv1.VirtualMachineInstanceList](kindVMI, &kubevirtv1.VirtualMachineInstance{}, v.VirtualMachineInstances(ns)),
		kindPVC:    kindFuncs[*corev1.PersistentVolumeClaimList](kindPVC, &corev1.PersistentVolumeClaim{}, core.PersistentVolumeClaims(ns)),
		kindSecret: kindFuncs[*corev1.SecretList](kindSecret, &corev1.Secret{}, core.Secrets(ns)),
	}
	for _, t := range targets {
		if err := d.waitGone(ctx, api, funcs[t.kind], t.name, t.uid); err != nil {
			return err
		}
	}
	return nil
}

func (d *Driver) waitGone(ctx context.Context, api *harvesterAPI, f listWatchFuncs, name string, uid types.UID) error {
	lw := namedListWatch(ctx, api, name, f)
	var last runtime.Object
	isTarget := func(obj any) bool {
		m, ok := obj.(metav1.Object)
		return ok && (uid == "" || m.GetUID() == uid)
	}
	precondition := func(store cache.Store) (bool, error) {
		obj, exists, err := store.GetByKey(d.VMNamespace + "/" + name)
		last = nil
		if exists && isTarget(obj) {
			last = obj.(runtime.Object)
			return false, err
		}
		return true, err
	}
	_, err := watchtools.UntilWithSync(ctx, lw, f.obj, precondition, func(ev watch.Event) (bool, error) {
		last = ev.Object
		return ev.Type == watch.Deleted || !isTarget(ev.Object), nil
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
