// Stand-in for Harvester's image controller, Harvester v1.8.1: an image is
// imported at once, with its StorageClass. It follows
// https://github.com/harvester/harvester/blob/v1.8.1/pkg/controller/master/image/vm_image_controller.go.

package controllers

import (
	"context"
	"fmt"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// reconcileImage imports a VirtualMachineImage at once: its storage class
// longhorn-<name> is created and the status says Imported (or failed, for
// the sim failure annotation or a spec that does not decode).
func (s *sim) reconcileImage(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.images, ns, name)
	if u == nil || u.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	var img harvesterv1.VirtualMachineImage
	decodeErr := decodeStrict(u, &img)
	if decodeErr != nil {
		img = harvesterv1.VirtualMachineImage{}
		img.Namespace, img.Name, img.Annotations = ns, name, u.GetAnnotations()
		looseStatus(u, &img.Status)
	}
	st := imageStatus(&img, decodeErr, time.Now())
	if st.StorageClassName != "" && st.Progress == 100 {
		if err := s.ensureImageStorageClass(ctx, &img); err != nil {
			return 0, err
		}
	}
	_, err := s.writeStatus(ctx, gvrImage, u, img.Status, st)
	return 0, err
}

func (s *sim) ensureImageStorageClass(ctx context.Context, img *harvesterv1.VirtualMachineImage) error {
	name := imageStorageClassName(img.Name)
	if _, err := s.kubeInformers.Storage().V1().StorageClasses().Lister().Get(name); err == nil {
		return nil
	}
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			hv.AnnotationImageID: img.Namespace + "/" + img.Name}},
		Provisioner: LonghornProvisioner,
		Parameters: map[string]string{
			"backingImage": img.Namespace + "-" + img.Name, "migratable": "true",
			"numberOfReplicas": "3", "staleReplicaTimeout": "30"},
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		AllowVolumeExpansion: ptr.To(true),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := s.kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create storage class %s for image %s/%s: %w", name, img.Namespace, img.Name, err)
	}
	return nil
}
