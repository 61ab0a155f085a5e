// Stand-in for Longhorn's CSI provisioner, Longhorn v1.10.0: a
// PersistentVolume for each Longhorn claim. It follows
// https://github.com/longhorn/longhorn-manager/blob/v1.10.0/csi/controller_server.go.

package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

const (
	// pvPrefix marks queue keys that name a PersistentVolume.
	pvPrefix = "pv:"
	// LabelProvisioned marks the PersistentVolumes the simulator created.
	LabelProvisioned = "sim.harvesterhci.io/provisioned"

	pvcProtectionFinalizer = "kubernetes.io/pvc-protection"
	pvProtectionFinalizer  = "kubernetes.io/pv-protection"
	defaultClaimSize       = "10Gi"
)

// annStorageProvisioner is what kube-controller-manager's
// persistentvolume-binder sets on a claim whose StorageClass has an
// external provisioner: the provisioner that should create its volume.
const annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"

// reconcilePVC plays Longhorn's provisioner (the binding itself is done by
// kube-controller-manager's persistentvolume-binder, as on Harvester):
// it creates the volume of each claim the binder handed to
// driver.longhorn.io (waiting for an image to be imported), releases
// deleted claims no VMI uses, and deletes the volumes of deleted claims.
func (s *sim) reconcilePVC(ctx context.Context, key string) (time.Duration, error) {
	if name, ok := strings.CutPrefix(key, pvPrefix); ok {
		return 0, s.reclaimPV(ctx, name)
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	cached, err := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns).Get(name)
	if err != nil {
		return 0, nil
	}
	if cached.DeletionTimestamp != nil {
		return 0, s.releaseClaim(ctx, cached)
	}
	if cached.Status.Phase == corev1.ClaimBound || cached.Spec.VolumeName != "" ||
		cached.Annotations[annStorageProvisioner] != LonghornProvisioner || cached.Spec.StorageClassName == nil {
		return 0, nil // the binder's (or another provisioner's) turn
	}
	sc, err := s.kubeInformers.Storage().V1().StorageClasses().Lister().Get(*cached.Spec.StorageClassName)
	if err != nil {
		return 0, nil // the binder reports a missing class
	}
	if ref := cached.Annotations[hv.AnnotationImageID]; ref != "" {
		if !s.imageReady(ref) {
			return 0, nil // re-queued when images change
		}
	}
	return 0, s.provision(ctx, cached, sc)
}

// provision creates the claim's PersistentVolume, pre-bound to it, as an
// external provisioner does; the binder then binds both.
func (s *sim) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) error {
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		size = resource.MustParse(defaultClaimSize)
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	pvName := "pvc-" + string(pvc.UID)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Labels:      map[string]string{LabelProvisioned: "true"},
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": sc.Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              sc.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, ResourceVersion: pvc.ResourceVersion},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: sc.Provisioner, VolumeHandle: pvName}},
		},
	}
	_, err := s.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("provision pv for pvc %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	s.event.emit(pvcObject(pvc), corev1.EventTypeNormal, "ProvisioningSucceeded",
		fmt.Sprintf("Successfully provisioned volume %s", pvName))
	return nil
}

// releaseClaim removes the pvc-protection finalizer of a deleted claim once
// no VMI mounts it.
func (s *sim) releaseClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if !hasString(pvc.Finalizers, pvcProtectionFinalizer) || s.claimInUse(pvc.Namespace, pvc.Name) {
		return nil
	}
	claims := s.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	err := retryConflict(func() error {
		cur, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !hasString(cur.Finalizers, pvcProtectionFinalizer) {
			return nil
		}
		cur.Finalizers = without(cur.Finalizers, pvcProtectionFinalizer)
		_, err = claims.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release pvc %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

// claimInUse reports whether any VMI in the namespace mounts the claim.
func (s *sim) claimInUse(ns, claim string) bool {
	list, _ := s.vmis.ByNamespace(ns).List(labels.Everything())
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		vols, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumes")
		for _, v := range vols {
			m, _ := v.(map[string]any)
			if n, _, _ := unstructured.NestedString(m, "persistentVolumeClaim", "claimName"); n == claim {
				return true
			}
			if n, _, _ := unstructured.NestedString(m, "dataVolume", "name"); n == claim {
				return true
			}
		}
	}
	return false
}

// reclaimPV deletes a simulator-provisioned volume with the Delete policy
// whose claim is gone.
func (s *sim) reclaimPV(ctx context.Context, name string) error {
	pvs := s.kube.CoreV1().PersistentVolumes()
	pv, err := pvs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pv %s: %w", name, err)
	}
	if pv.Labels[LabelProvisioned] != "true" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.ClaimRef == nil {
		return nil
	}
	ref := pv.Spec.ClaimRef
	if cur, err := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ref.Namespace).Get(ref.Name); err == nil && cur.UID == ref.UID {
		return nil
	}
	if pv.Status.Phase == corev1.VolumeBound {
		pv.Status.Phase = corev1.VolumeReleased
		if pv, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("release pv %s: %w", name, err)
		}
	}
	if pv.DeletionTimestamp == nil {
		if err := pvs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("delete pv %s: %w", name, err)
		}
	}
	// Play the pv-protection controller too, in case none runs.
	err = retryConflict(func() error {
		cur, err := pvs.Get(ctx, name, metav1.GetOptions{})
		if err != nil || !hasString(cur.Finalizers, pvProtectionFinalizer) {
			return err
		}
		cur.Finalizers = without(cur.Finalizers, pvProtectionFinalizer)
		_, err = pvs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release pv %s: %w", name, err)
	}
	return nil
}

// pvcObject wraps a claim for the event sink.
func pvcObject(pvc *corev1.PersistentVolumeClaim) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("v1")
	u.SetKind("PersistentVolumeClaim")
	u.SetNamespace(pvc.Namespace)
	u.SetName(pvc.Name)
	u.SetUID(pvc.UID)
	u.SetResourceVersion(pvc.ResourceVersion)
	return u
}

// imageReady reports whether the image ref ("ns/name") names is in the
// cache and imported.
func (s *sim) imageReady(ref string) bool {
	ns, name, err := hv.ParseRef(ref, "")
	if err != nil {
		return false
	}
	u := getCached(s.images, ns, name)
	if u == nil {
		return false
	}
	var img harvesterv1.VirtualMachineImage
	looseStatus(u, &img.Status)
	return imageImported(&img)
}
