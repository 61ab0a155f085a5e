package harvesterapi

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
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
// set. NotFound, and a UID conflict, mean the object is already gone: done
// (and NotFound is remembered, see Seen.Gone).
func remove(ctx context.Context, a *API, kind, ns, name string, uid types.UID, grace *int64, del func(context.Context, metav1.DeleteOptions) error) error {
	opts := metav1.DeleteOptions{GracePeriodSeconds: grace}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	a.seen.deleting(kind, ns, name)
	_, err := do(ctx, a, "delete "+kind+" "+ref(ns, name), func(c context.Context) (struct{}, error) { return struct{}{}, del(c, opts) })
	if apierrors.IsNotFound(a.seen.noteAbsent(kind, ns, name, err)) || (uid != "" && apierrors.IsConflict(err)) {
		return nil
	}
	return err
}

// NotFoundOr returns the notFound problem for a NotFound, else err.
func NotFoundOr(err, notFound error) error {
	if apierrors.IsNotFound(err) {
		return notFound
	}
	return err
}
