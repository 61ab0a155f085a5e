package kubeapi

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ListWatcher is the List/Watch half of a typed or dynamic client of one
// kind (for example kube.CoreV1().Secrets(ns), dyn.Resource(gvr).Namespace(ns)).
type ListWatcher[L runtime.Object] interface {
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// Kind lists and watches one kind of object (in one namespace).
type Kind struct {
	Name    string         // for messages, e.g. "VM", "Secret"
	Example runtime.Object // an empty object of the kind, for the informer
	List    func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)
	Watch   func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// KindOf makes a Kind from a client.
func KindOf[L runtime.Object](name string, example runtime.Object, c ListWatcher[L]) Kind {
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }
	return Kind{Name: name, Example: example, List: list, Watch: c.Watch}
}

// Consistent turns the reflector's first list (resourceVersion "0": any
// state kube-apiserver's watch cache holds) into a consistent read
// (resourceVersion ""); a relist from a resource version is left alone.
func Consistent(o metav1.ListOptions) metav1.ListOptions {
	if o.ResourceVersion == "0" {
		o.ResourceVersion, o.ResourceVersionMatch = "", ""
	}
	return o
}

// NamedListWatch lists and watches only the object called name (a
// metadata.name field selector). Each list has the deadline callTimeout
// (<= 0: the context's own); watches last as long as their context.
//
// The first list is a consistent read: client-go's reflector asks for
// resourceVersion "0" (whatever kube-apiserver's watch cache holds, which
// may be older than a write this process just made or saw), and a wait
// would then judge a state from before it (an object just created seen
// as missing, a request just made seen as answered by the refusal of an
// earlier one).
func NamedListWatch(k Kind, name string, callTimeout time.Duration) *cache.ListWatch {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			o = Consistent(o)
			var out runtime.Object
			err := Call(ctx, callTimeout, func(c context.Context) error {
				var err error
				out, err = k.List(c, o)
				return err
			})
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return k.Watch(ctx, o)
		},
	}
}

// Wait watches the object namespace/name (namespace "" for cluster-scoped
// kinds) until cond holds, and returns the object cond accepted. cond sees
// the object as the cache has it first, then every change; it gets the zero
// T (nil) while the object does not exist, so Wait also waits for deletion.
// T is the kind's object type, e.g. *corev1.Secret or
// *unstructured.Unstructured. A cond error ends the wait with that error.
func Wait[T runtime.Object](ctx context.Context, k Kind, namespace, name string, callTimeout time.Duration, cond func(obj T) (bool, error)) (T, error) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	var last T
	check := func(obj any, exists bool) (bool, error) {
		var t T
		if exists {
			typed, ok := obj.(T)
			if !ok {
				return false, nil
			}
			t = typed
		}
		done, err := cond(t)
		if done {
			last = t
		}
		return done, err
	}
	precondition := func(store cache.Store) (bool, error) {
		obj, exists, err := store.GetByKey(key)
		if err != nil {
			return false, err
		}
		return check(obj, exists)
	}
	_, err := watchtools.UntilWithSync(ctx, NamedListWatch(k, name, callTimeout), k.Example, precondition, func(ev watch.Event) (bool, error) {
		return check(ev.Object, ev.Type != watch.Deleted)
	})
	return last, err
}
