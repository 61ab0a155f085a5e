package sim

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
)

type (
	listFunc  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)
)

// waitFor watches the object called name until cond holds for it.
// example gives the object type to the informer.
func waitFor[T runtime.Object](ctx context.Context, name string, example T, cond func(T) bool, list listFunc, watchFn watchFunc) error {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return list(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return watchFn(ctx, o)
		},
	}
	_, err := toolswatch.UntilWithSync(ctx, lw, example, nil, func(e watch.Event) (bool, error) {
		obj, ok := e.Object.(T)
		return ok && cond(obj), nil
	})
	return err
}
