package harvesterapi

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func (a *API) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	obj, err := do(ctx, a, "get Secret "+ref(ns, name), func(c context.Context) (*corev1.Secret, error) {
		return a.kube.Secrets(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindSecret, ns, name, err)
}

func (a *API) CreateSecret(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	a.seen.created(KindSecret, s.Namespace, s.Name)
	return do(ctx, a, "create Secret "+ref(s.Namespace, s.Name), func(c context.Context) (*corev1.Secret, error) {
		return a.kube.Secrets(s.Namespace).Create(c, s, metav1.CreateOptions{})
	})
}

// SetSecretOwners sets the owner references of the Secret of that UID
// with one merge patch (any other Secret of the name is not changed).
func (a *API) SetSecretOwners(ctx context.Context, ns, name string, uid types.UID, owners []metav1.OwnerReference) error {
	patch, err := metaPatch(uid, map[string]any{"ownerReferences": owners})
	if err != nil {
		return err
	}
	_, err = do(ctx, a, "set the owner of Secret "+ref(ns, name), func(c context.Context) (*corev1.Secret, error) {
		return a.kube.Secrets(ns).Patch(c, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
	return err
}

func (a *API) DeleteSecret(ctx context.Context, ns, name string, uid types.UID) error {
	return remove(ctx, a, KindSecret, ns, name, uid, nil, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.Secrets(ns).Delete(c, name, o)
	})
}
