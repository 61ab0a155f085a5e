package sim

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// waitFor watches the object namespace/name of kind k until it exists and
// cond holds for it.
func waitFor[T runtime.Object](ctx context.Context, k kubeapi.Kind, namespace, name string, cond func(T) bool) error {
	var absent T
	_, err := kubeapi.Wait(ctx, k, namespace, name, 0, func(obj T) (bool, error) {
		return any(obj) != any(absent) && cond(obj), nil
	})
	return err
}
