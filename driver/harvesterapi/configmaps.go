package harvesterapi

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// KindClaim is a static address's claim (a ConfigMap), as messages name it.
const KindClaim = "address claim"

// ConfigMaps is the ConfigMaps of namespace ns, for watches.
func (a *API) ConfigMaps(ns string) kubeapi.Kind {
	return kubeapi.KindOf[*corev1.ConfigMapList](KindClaim, &corev1.ConfigMap{}, a.kube.ConfigMaps(ns))
}

// ListConfigMaps lists the ConfigMaps of ns matching a label selector.
func (a *API) ListConfigMaps(ctx context.Context, ns, selector string) ([]corev1.ConfigMap, error) {
	list, err := do(ctx, a, "list ConfigMaps in "+ns+" labelled "+selector, func(c context.Context) (*corev1.ConfigMapList, error) {
		return a.kube.ConfigMaps(ns).List(c, metav1.ListOptions{LabelSelector: selector})
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// CreateConfigMap creates one ConfigMap (AlreadyExists: the name is taken).
func (a *API) CreateConfigMap(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	a.seen.created(KindClaim, cm.Namespace, cm.Name)
	return do(ctx, a, "create ConfigMap "+ref(cm.Namespace, cm.Name), func(c context.Context) (*corev1.ConfigMap, error) {
		return a.kube.ConfigMaps(cm.Namespace).Create(c, cm, metav1.CreateOptions{})
	})
}
