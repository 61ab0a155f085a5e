package credentials

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// objectOf is the object of a kind this package makes (false for another
// kind): restapi.NamedOf maps kinds to clients for both tools.
func (h *Harvester) objectOf(kind, ns, name string) (restapi.Named, bool) {
	return restapi.NamedOf(h.Client, kind, ns, name)
}

// objectFor is the object of a built one (its TypeMeta names the kind).
func (h *Harvester) objectFor(obj runtime.Object) (restapi.Named, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return restapi.Named{}, fmt.Errorf("%T is not an object of the credential", obj)
	}
	o, ok := h.objectOf(kindOf(obj), m.GetNamespace(), m.GetName())
	if !ok {
		return restapi.Named{}, fmt.Errorf("%s %s is not a kind of the credential", kindOf(obj), m.GetName())
	}
	return o, nil
}
