package harvesterapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Every Harvester API call of the driver is one method of API, in the
// file of its resource (vms.go, vmis.go, secrets.go, volumes.go,
// configmaps.go, ...), with the per-call deadline applied and errors named
// after the operation ("get VM default/m1: ..."; a 401 becomes the
// Options' credential-rejected error).
// Gets return the API's NotFound (test it with apierrors.IsNotFound, or use
// Absent); deletes count NotFound as done.

// do runs one API call with the per-call deadline and names its error.
// In fail-fast mode (pre-create), once a call failed at the connection
// level every later call returns that failure without trying.
func do[T any](ctx context.Context, a *API, op string, fn func(context.Context) (T, error)) (T, error) {
	if a.unreachable != nil {
		var zero T
		return zero, a.unreachable
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	v, err := fn(ctx)
	err = a.Explain(op, err)
	a.noteUnreachable(err)
	return v, err
}

// Absent turns the NotFound of a get of the object called name into (nil,
// nil). Only the API server's answer that this object does not exist
// counts: a 404 without the object's name (a resource the server does not
// serve, a proxy's page) stays an error.
func Absent[T any](name string, obj *T, err error) (*T, error) {
	if ObjectNotFound(err, name) {
		return nil, nil
	}
	return obj, err
}

// ObjectNotFound reports whether err is the API server's NotFound for the
// object called name.
func ObjectNotFound(err error, name string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}

func ref(ns, name string) string { return ns + "/" + name }

// update reads, changes and writes one object with the per-call deadline,
// retrying on conflicts; mutate reports whether it changed anything.
func update[T any](ctx context.Context, a *API, op string, get func(context.Context) (T, error), mutate func(T) (bool, error), put func(context.Context, T) (T, error)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
		defer cancel()
		obj, err := get(c)
		if err != nil {
			return err
		}
		if changed, err := mutate(obj); err != nil || !changed {
			return err
		}
		_, err = put(c, obj)
		return err
	})
	return a.Explain(op, err)
}

// remove deletes the object kind ns/name, with a UID precondition when uid
// is set (so a new object of the same name is never hit) and grace when
// set. NotFound means the object is already gone: done (and remembered,
// see Seen.Gone).
//
// A Conflict is one of two answers. Either the UID precondition failed:
// the name now holds another object, so this one is gone (done). Or an
// admission webhook refused the delete: Harvester's refuses to delete a
// volume while its cache shows a VM using it that is not being deleted
// ("can not delete the volume ... which is currently attached to VM"), a
// cache that lags the VM's deletion by the time its watch takes. One list
// of the name tells them apart (kubeapi.DeleteRefused); a refusal is tried
// again, paced by refusalRetry (there is nothing to watch: the webhook's
// cache is not visible), and its message is returned once the pace or ctx
// runs out.
func remove(ctx context.Context, a *API, kind, ns, name string, uid types.UID, grace *int64, del func(context.Context, metav1.DeleteOptions) error) error {
	opts := metav1.DeleteOptions{GracePeriodSeconds: grace}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	a.seen.deleting(kind, ns, name)
	op := "delete " + kind + " " + ref(ns, name)
	pace := refusalRetry
	var refusal error // the last refusal, reported if the time runs out in a later try
	for {
		_, err := do(ctx, a, op, func(c context.Context) (struct{}, error) { return struct{}{}, del(c, opts) })
		if apierrors.IsNotFound(a.seen.noteAbsent(kind, ns, name, err)) || err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) {
			if refusal != nil && ctx.Err() != nil {
				return fmt.Errorf("%w (the time ran out while trying again: %w)", refusal, ctx.Err())
			}
			return err
		}
		refusal = err
		if uid != "" {
			refused, lerr := kubeapi.DeleteRefused(ctx, uid, a.currentUID(kind, ns, name))
			if lerr != nil {
				return fmt.Errorf("%w (and telling a refusal from a replaced object: %w)", err, lerr)
			}
			if !refused {
				return nil
			}
		}
		if pace.Steps < 1 || !sleep(ctx, min(pace.Step(), refusalMaxGap)) {
			return err
		}
	}
}

// refusalRetry paces the deletes remove tries again after a refusal:
// at most 2 s apart, so a delete goes through soon after the webhook's
// cache catches up, and about 50 s in all, well past that.
// (wait.Backoff's Cap would end the steps on reaching it: refusalMaxGap
// clamps each one instead.)
var refusalRetry = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Steps: 30}

const refusalMaxGap = 2 * time.Second

// currentUID reads the UID that kind ns/name holds now, with one list of
// the name ("" and a NotFound: none).
func (a *API) currentUID(kind, ns, name string) func(context.Context) (types.UID, error) {
	return func(ctx context.Context) (types.UID, error) {
		k := a.kinds(ns)[kind]
		list, err := do(ctx, a, "list "+kind+" "+ref(ns, name), func(c context.Context) (runtime.Object, error) {
			return k.List(c, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		})
		if err != nil {
			return "", err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return "", fmt.Errorf("list %s %s: %w", kind, ref(ns, name), err)
		}
		for _, o := range items {
			if m, ok := o.(metav1.Object); ok && m.GetName() == name {
				return m.GetUID(), nil
			}
		}
		return "", apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name)
	}
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// NotFoundOr returns the notFound problem for a NotFound, else err.
func NotFoundOr(err, notFound error) error {
	if apierrors.IsNotFound(err) {
		return notFound
	}
	return err
}
