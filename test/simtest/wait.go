package simtest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
)

// WaitObject watches one object until cond holds. cond gets nil while the
// object does not exist, so it also waits for deletion.
func WaitObject(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string,
	cond func(obj *unstructured.Unstructured) bool) error {
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespace != "" {
		ri = dyn.Resource(gvr).Namespace(namespace)
	}
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return ri.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return ri.Watch(ctx, o)
		},
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	precondition := func(store cache.Store) (bool, error) {
		obj, exists, err := store.GetByKey(key)
		if err != nil {
			return false, err
		}
		if !exists {
			return cond(nil), nil
		}
		return cond(obj.(*unstructured.Unstructured)), nil
	}
	_, err := toolswatch.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, precondition, func(e watch.Event) (bool, error) {
		if e.Type == watch.Deleted {
			return cond(nil), nil
		}
		u, ok := e.Object.(*unstructured.Unstructured)
		return ok && cond(u), nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s %s: %w", gvr.Resource, key, err)
	}
	return nil
}

// Gone is a WaitObject condition: the object no longer exists.
func Gone(obj *unstructured.Unstructured) bool { return obj == nil }
