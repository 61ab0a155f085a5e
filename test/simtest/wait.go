package simtest

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// WaitObject watches one object until cond holds. cond gets nil while the
// object does not exist, so it also waits for deletion.
func WaitObject(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string,
	cond func(obj *unstructured.Unstructured) bool) error {
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespace != "" {
		ri = dyn.Resource(gvr).Namespace(namespace)
	}
	k := kubeapi.KindOf[*unstructured.UnstructuredList](gvr.Resource, &unstructured.Unstructured{}, ri)
	if _, err := kubeapi.Wait(ctx, k, namespace, name, 0, func(u *unstructured.Unstructured) (bool, error) { return cond(u), nil }); err != nil {
		return fmt.Errorf("wait for %s %s/%s: %w", gvr.Resource, namespace, name, err)
	}
	return nil
}

// Gone is a WaitObject condition: the object no longer exists.
func Gone(obj *unstructured.Unstructured) bool { return obj == nil }
