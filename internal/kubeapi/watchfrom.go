package kubeapi

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ErrWatchEnded is returned (wrapped) by WaitFrom when the watch cannot go
// on from where it was (its resource version is too old, or the server
// ended it with an error): the caller starts over with Wait.
var ErrWatchEnded = errors.New("the watch ended before the condition held")

// WaitFrom is Wait for a caller that knows the object's state at resource
// version rv (for example from the answer to its create): it watches the
// object's changes after rv, in one request (no list first; reconnecting
// from the last event seen if the connection drops), until cond holds.
// cond gets each changed object, or the zero T (nil) once it is deleted.
func WaitFrom[T any](ctx context.Context, k Kind, name, rv string, cond func(obj T) (bool, error)) (T, error) {
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	return waitEvents(ctx, k, byName, rv, k.Name+" "+name, cond)
}

// WaitGoneFrom waits until every object of names, all selected by the
// label selector, is deleted after resource version rv (when the caller
// listed them): one watch for all of them.
func WaitGoneFrom(ctx context.Context, k Kind, labelSelector, rv string, names []string) error {
	left := map[string]bool{}
	for _, n := range names {
		left[n] = true
	}
	if len(left) == 0 {
		return nil
	}
	deleted := func(ev watch.Event) bool {
		if m, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Deleted {
			delete(left, m.GetName())
		}
		return len(left) == 0
	}
	_, err := waitEvents(ctx, k, metav1.ListOptions{LabelSelector: labelSelector}, rv, k.Name+"s "+labelSelector, func(runtime.Object) (bool, error) { return false, nil }, deleted)
	return err
}

// waitEvents watches from rv (retrying dropped connections from the last
// event) until cond accepts an object (nil for a deletion) or, when given,
// done accepts an event.
func waitEvents[T any](ctx context.Context, k Kind, o metav1.ListOptions, rv, what string, cond func(obj T) (bool, error), done ...func(watch.Event) bool) (T, error) {
	var last T
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector, opts.LabelSelector = o.FieldSelector, o.LabelSelector
		return k.Watch(ctx, opts)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return last, err
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return last, fmt.Errorf("watch %s: %w", what, ErrWatchEnded)
			}
			if ev.Type == watch.Error {
				return last, fmt.Errorf("watch %s: %w: %w", what, ErrWatchEnded, apierrors.FromObject(ev.Object))
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			if len(done) > 0 && done[0](ev) {
				return last, nil
			}
			var obj T
			if ev.Type != watch.Deleted {
				typed, ok := ev.Object.(T)
				if !ok {
					continue
				}
				obj = typed
			}
			done, err := cond(obj)
			if err != nil || done {
				return obj, err
			}
		}
	}
}
