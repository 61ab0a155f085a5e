package restapi

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Resource is the typed client of one kind (in one namespace, or cluster
// wide): the methods of client-go's generated typed clients this project
// uses, with their signatures, so those clients (and their fakes) are
// Resources too.
type Resource[T, L runtime.Object] interface {
	Creator[T]
	Get(ctx context.Context, name string, o metav1.GetOptions) (T, error)
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
	Update(ctx context.Context, obj T, o metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, o metav1.DeleteOptions) error
}

// Creator creates objects of one kind (reviews are only ever created).
type Creator[T runtime.Object] interface {
	Create(ctx context.Context, obj T, o metav1.CreateOptions) (T, error)
}

// resource implements Resource with REST calls of client.
type resource[T, L runtime.Object] struct {
	client  rest.Interface
	plural  string // the resource, e.g. "secrets"
	ns      string // "" for cluster-scoped kinds
	newObj  func() T
	newList func() L
}

func newResource[T, L runtime.Object](client rest.Interface, plural, ns string, newObj func() T, newList func() L) *resource[T, L] {
	return &resource[T, L]{client: client, plural: plural, ns: ns, newObj: newObj, newList: newList}
}

// req starts a request of verb on the resource (in its namespace).
func (r *resource[T, L]) req(verb string) *rest.Request {
	return r.client.Verb(verb).NamespaceIfScoped(r.ns, r.ns != "").Resource(r.plural)
}

// into decodes res into a new object. Like client-go's typed clients, it
// returns that (empty) object with the error too, never nil.
func (r *resource[T, L]) into(res rest.Result) (T, error) {
	obj := r.newObj()
	err := res.Into(obj)
	return obj, err
}

func (r *resource[T, L]) Get(ctx context.Context, name string, o metav1.GetOptions) (T, error) {
	return r.into(r.req("GET").Name(name).VersionedParams(&o, parameterCodec).Do(ctx))
}

func (r *resource[T, L]) List(ctx context.Context, o metav1.ListOptions) (L, error) {
	list := r.newList()
	err := r.req("GET").VersionedParams(&o, parameterCodec).Timeout(timeoutOf(o)).Do(ctx).Into(list)
	return list, err
}

func (r *resource[T, L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return r.req("GET").VersionedParams(&o, parameterCodec).Timeout(timeoutOf(o)).Watch(ctx)
}

func (r *resource[T, L]) Create(ctx context.Context, obj T, o metav1.CreateOptions) (T, error) {
	return r.into(r.req("POST").VersionedParams(&o, parameterCodec).Body(obj).Do(ctx))
}

func (r *resource[T, L]) Update(ctx context.Context, obj T, o metav1.UpdateOptions) (T, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return r.newObj(), fmt.Errorf("update %s: %w", r.plural, err)
	}
	return r.into(r.req("PUT").Name(m.GetName()).VersionedParams(&o, parameterCodec).Body(obj).Do(ctx))
}

func (r *resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, subresources ...string) (T, error) {
	return r.into(r.client.Patch(pt).NamespaceIfScoped(r.ns, r.ns != "").Resource(r.plural).Name(name).
		SubResource(subresources...).VersionedParams(&o, parameterCodec).Body(data).Do(ctx))
}

func (r *resource[T, L]) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	return r.req("DELETE").Name(name).Body(&o).Do(ctx).Error()
}

// timeoutOf is the request timeout a list or watch asks for (0: none).
func timeoutOf(o metav1.ListOptions) time.Duration {
	if o.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*o.TimeoutSeconds) * time.Second
}
