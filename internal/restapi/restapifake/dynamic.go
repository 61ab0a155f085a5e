package restapifake

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// Dynamic is d (client-go's fake dynamic client) with its watches
// answering sendInitialEvents as kube-apiserver does (see streamInitial).
func Dynamic(d dynamic.Interface) dynamic.Interface { return dynamicInitial{d} }

type dynamicInitial struct{ dynamic.Interface }

func (d dynamicInitial) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return nsResourceInitial{d.Interface.Resource(gvr)}
}

type nsResourceInitial struct {
	dynamic.NamespaceableResourceInterface
}

func (r nsResourceInitial) Namespace(ns string) dynamic.ResourceInterface {
	return resourceInitial{r.NamespaceableResourceInterface.Namespace(ns)}
}

func (r nsResourceInitial) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return resourceInitial{r.NamespaceableResourceInterface}.Watch(ctx, o)
}

type resourceInitial struct{ dynamic.ResourceInterface }

func (r resourceInitial) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) }
	return streamInitial(ctx, o, list, r.ResourceInterface.Watch, func() runtime.Object { return &unstructured.Unstructured{Object: map[string]any{}} })
}
