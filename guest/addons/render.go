package addons

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Objects validates o and returns the selected add-on objects in apply
// order (RBAC before workloads).
func Objects(o Options) ([]runtime.Object, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("render add-ons: %w", err)
	}
	var objs []runtime.Object
	if o.CCM {
		objs = append(objs, CloudProviderObjects(o)...)
		if o.KubeVIP {
			objs = append(objs, KubeVIPObjects(o)...)
		}
	}
	if o.CSI {
		objs = append(objs, CSIObjects(o)...)
	}
	return objs, nil
}

// CloudConfigSecret builds the Secret holding the Harvester kubeconfig the
// CCM and CSI driver read. It carries a credential.
func CloudConfigSecret(o Options, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: typeMeta("v1", "Secret"),
		ObjectMeta: metav1.ObjectMeta{
			Name: o.CloudConfigSecret, Namespace: o.Namespace,
			Labels: o.labels("harvester-cloud-config", CloudProviderVersion),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{CloudConfigKey: kubeconfig},
	}
}
