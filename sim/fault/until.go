package fault

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// untilEvery watches every object of res and returns once shows holds for
// each of them, or fails after 30 s.
func untilEvery(ctx context.Context, res dynamic.NamespaceableResourceInterface, shows func(*unstructured.Unstructured) bool) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(c context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(c, kubeapi.Consistent(o)) // not a cached state older than what the caller just wrote
		},
		WatchFuncWithContext: func(c context.Context, o metav1.ListOptions) (watch.Interface, error) { return res.Watch(c, o) },
	}
	var store cache.Store
	every := func() bool {
		for _, obj := range store.List() {
			if u, ok := obj.(*unstructured.Unstructured); ok && !shows(u) {
				return false
			}
		}
		return true
	}
	_, err := watchtools.UntilWithSync(wctx, lw, &unstructured.Unstructured{}, func(s cache.Store) (bool, error) {
		store = s
		return every(), nil
	}, func(watch.Event) (bool, error) { return every(), nil })
	return err
}
