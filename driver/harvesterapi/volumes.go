package harvesterapi

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

func (a *API) GetPVC(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	obj, err := do(ctx, a, "get volume "+ref(ns, name), func(c context.Context) (*corev1.PersistentVolumeClaim, error) {
		return a.kube.PersistentVolumeClaims(ns).Get(c, name, metav1.GetOptions{})
	})
	return obj, a.seen.noteAbsent(KindPVC, ns, name, err)
}

func (a *API) ListPVCs(ctx context.Context, ns, selector string) (*corev1.PersistentVolumeClaimList, error) {
	return do(ctx, a, "list volumes in "+ns+" labelled "+selector, func(c context.Context) (*corev1.PersistentVolumeClaimList, error) {
		return a.kube.PersistentVolumeClaims(ns).List(c, metav1.ListOptions{LabelSelector: selector})
	})
}

// StreamPVCs reads the PVCs of ns matching selector with one watch that
// streams their state first and goes on with their changes (for
// Stream.WaitGone): a list and a watch in one request. The error wraps
// kubeapi.ErrWatchEnded when the server does not stream: use ListPVCs.
func (a *API) StreamPVCs(ctx context.Context, ns, selector string) (*kubeapi.Stream, []corev1.PersistentVolumeClaim, error) {
	initial := a.streamTimeout()
	s, err := kubeapi.OpenStream(ctx, a.PVCs(ns), selector, initial)
	if err != nil {
		return nil, nil, err
	}
	out := make([]corev1.PersistentVolumeClaim, 0, len(s.Items))
	for _, it := range s.Items {
		if p, ok := it.(*corev1.PersistentVolumeClaim); ok {
			out = append(out, *p)
		}
	}
	return s, out, nil
}

func (a *API) DeletePVC(ctx context.Context, ns, name string, uid types.UID) error {
	return remove(ctx, a, KindPVC, ns, name, uid, nil, func(c context.Context, o metav1.DeleteOptions) error {
		return a.kube.PersistentVolumeClaims(ns).Delete(c, name, o)
	})
}

func (a *API) GetStorageClass(ctx context.Context, name string) (*storagev1.StorageClass, error) {
	return do(ctx, a, "get storage class "+name, func(c context.Context) (*storagev1.StorageClass, error) {
		return a.kube.StorageClasses().Get(c, name, metav1.GetOptions{})
	})
}

// streamTimeout bounds the arrival of a streamed watch's initial state:
// the call deadline, or 30 s without one.
func (a *API) streamTimeout() time.Duration {
	if a.opts.CallTimeout <= 0 {
		return 30 * time.Second
	}
	return a.opts.CallTimeout
}
