package harvesterapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	watchtools "k8s.io/client-go/tools/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Kinds of a machine's objects the driver watches, as messages name them.
const (
	KindVM     = "VM"
	KindVMI    = "VMI"
	KindPVC    = "volume"
	KindSecret = "Secret"
)

// VMs is the VirtualMachines of namespace ns, for watches.
func (a *API) VMs(ns string) kubeapi.Kind {
	return kubeapi.KindOf[*kubevirtv1.VirtualMachineList](KindVM, &kubevirtv1.VirtualMachine{}, a.kube.VirtualMachines(ns))
}

// VMIs is the VirtualMachineInstances of namespace ns, for watches.
func (a *API) VMIs(ns string) kubeapi.Kind {
	return kubeapi.KindOf[*kubevirtv1.VirtualMachineInstanceList](KindVMI, &kubevirtv1.VirtualMachineInstance{}, a.kube.VirtualMachineInstances(ns))
}

// PVCs is the PersistentVolumeClaims of namespace ns, for watches.
func (a *API) PVCs(ns string) kubeapi.Kind {
	return kubeapi.KindOf[*corev1.PersistentVolumeClaimList](KindPVC, &corev1.PersistentVolumeClaim{}, a.kube.PersistentVolumeClaims(ns))
}

// Secrets is the Secrets of namespace ns, for watches.
func (a *API) Secrets(ns string) kubeapi.Kind {
	return kubeapi.KindOf[*corev1.SecretList](KindSecret, &corev1.Secret{}, a.kube.Secrets(ns))
}

// WaitGoneAfter waits until target in namespace ns is gone, watching its
// changes after resource version rv in one request: rv must be one at
// which the object existed, or at which it was about to be deleted by what
// the caller did (a watch never shows a deletion from before its resource
// version). A target the process already saw gone (Seen.Gone) is done at
// once, without a request. When the watch cannot go on from rv it returns
// an error wrapping kubeapi.ErrWatchEnded (the caller lists and watches,
// see WaitRemoved).
func (a *API) WaitGoneAfter(ctx context.Context, ns, rv string, target Target) error {
	if a.seen.Gone(target.Kind, ns, target.Name) {
		return nil
	}
	kinds := a.kinds(ns)
	_, err := kubeapi.WaitFrom(ctx, kinds[target.Kind], target.Name, rv, func(obj runtime.Object) (bool, error) {
		m, ok := obj.(metav1.Object)
		return obj == nil || !ok || (target.UID != "" && m.GetUID() != target.UID), nil
	})
	return err
}

// kinds are the watchable kinds of namespace ns by their Kind names.
func (a *API) kinds(ns string) map[string]kubeapi.Kind {
	return map[string]kubeapi.Kind{KindVM: a.VMs(ns), KindVMI: a.VMIs(ns), KindPVC: a.PVCs(ns), KindSecret: a.Secrets(ns), KindClaim: a.ConfigMaps(ns)}
}

// Target is one object to wait for: gone when no object of that name
// exists or the one there has another UID (UID "" matches any).
type Target struct {
	Kind, Name string
	UID        types.UID
}

// WaitRemoved waits, with watches, until every target in namespace ns is
// gone; waitTimeout (the deadline of ctx) names the wait in its error.
func (a *API) WaitRemoved(ctx context.Context, ns string, waitTimeout time.Duration, targets []Target) error {
	kinds := a.kinds(ns)
	for _, t := range targets {
		if err := a.waitGone(ctx, kinds[t.Kind], ns, t.Name, t.UID, waitTimeout); err != nil {
			return err
		}
	}
	return nil
}

// waitGone waits for one object: one watch that streams the object's
// state first (kubeapi.WaitGone), or, where the server does not stream
// it, a list and a watch. One the process already saw gone (Seen.Gone) is
// done without a request.
func (a *API) waitGone(ctx context.Context, k kubeapi.Kind, ns, name string, uid types.UID, waitTimeout time.Duration) error {
	if a.seen.Gone(k.Name, ns, name) {
		return nil
	}
	last, err := kubeapi.WaitGone(ctx, k, name, uid)
	absent := err == nil && last == nil // no object of the name left, not even another UID's
	if errors.Is(err, kubeapi.ErrWatchEnded) && ctx.Err() == nil {
		absent = false
		_, err = kubeapi.Wait(ctx, k, ns, name, a.opts.CallTimeout, func(obj runtime.Object) (bool, error) {
			m, ok := obj.(metav1.Object)
			absent = obj == nil
			if obj == nil || !ok || (uid != "" && m.GetUID() != uid) {
				return true, nil
			}
			last = obj
			return false, nil
		})
	}
	if err == nil || apierrors.IsNotFound(err) {
		if absent {
			a.seen.sawAbsent(k.Name, ns, name)
		}
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
		detail := ""
		if m, ok := last.(metav1.Object); ok && m != nil {
			detail = fmt.Sprintf(" (deletion requested: %v, finalizers: %v)", m.GetDeletionTimestamp() != nil, m.GetFinalizers())
		}
		return fmt.Errorf("timed out after %s waiting for %s %s/%s to be deleted%s", waitTimeout, k.Name, ns, name, detail)
	}
	return a.Explain(fmt.Sprintf("watch %s %s/%s", k.Name, ns, name), err)
}
