package restapifake

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// initialEvents answers a watch with sendInitialEvents as kube-apiserver
// does (the fake clientsets ignore the option): the matching objects as
// ADDED, a bookmark annotated k8s.io/initial-events-end, then the
// matching changes.
type initialEvents[T runtime.Object, L runtime.Object] struct {
	restapi.Resource[T, L]
	empty func() T // a new, empty object of the kind (the bookmark)
}

func withInitialEvents[T runtime.Object, L runtime.Object](r restapi.Resource[T, L], empty func() T) restapi.Resource[T, L] {
	return initialEvents[T, L]{Resource: r, empty: empty}
}

func (r initialEvents[T, L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
	return streamInitial(ctx, o, list, r.Resource.Watch, func() runtime.Object { return r.empty() })
}

// streamInitial answers a watch with sendInitialEvents from list and
// watch, which ignore the option; a watch without it is watch's.
func streamInitial(ctx context.Context, o metav1.ListOptions, list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), empty func() runtime.Object) (watch.Interface, error) {
	if o.SendInitialEvents == nil || !*o.SendInitialEvents {
		return watchFn(ctx, o)
	}
	fsel, err := fields.ParseSelector(o.FieldSelector)
	if err != nil {
		return nil, err
	}
	lsel, err := labels.Parse(o.LabelSelector)
	if err != nil {
		return nil, err
	}
	matches := func(obj runtime.Object) bool {
		m, ok := obj.(metav1.Object)
		return ok && lsel.Matches(labels.Set(m.GetLabels())) &&
			fsel.Matches(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()})
	}
	items0, err := list(ctx, metav1.ListOptions{LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector})
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(items0)
	if err != nil {
		return nil, err
	}
	inner, err := watchFn(ctx, metav1.ListOptions{LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector})
	if err != nil {
		return nil, err
	}
	out := make(chan watch.Event)
	pw := watch.NewProxyWatcher(out)
	send := func(ev watch.Event) bool {
		select {
		case out <- ev:
			return true
		case <-pw.StopChan():
			return false
		}
	}
	go func() {
		defer close(out)
		defer inner.Stop()
		for _, it := range items {
			if matches(it) && !send(watch.Event{Type: watch.Added, Object: it}) {
				return
			}
		}
		bm := empty()
		if m, ok := any(bm).(metav1.Object); ok {
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		if !send(watch.Event{Type: watch.Bookmark, Object: bm}) {
			return
		}
		for {
			select {
			case ev, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				if matches(ev.Object) && !send(ev) {
					return
				}
			case <-pw.StopChan():
				return
			}
		}
	}()
	return pw, nil
}
