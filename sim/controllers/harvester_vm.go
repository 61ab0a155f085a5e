package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// VMFinalizer is Harvester v1.8's VM controller's (a wrangler OnRemove
// handler, VMController.CleanupPVCAndSnapshot): the PVCs the VM's
// annotation names are deleted before the VM goes.
const VMFinalizer = "wrangler.cattle.io/VMController.CleanupPVCAndSnapshot"

// reconcileVM is Harvester's side of a VM (KubeVirt's virt-controller
// runs it): its finalizer, the PVCs of its volumeClaimTemplates
// annotation, the owned-by annotation of the PVCs it uses, its last run
// strategy (harvesterhci.io/vmRunStrategy), its maintain-mode label on its
// VMI; on deletion the PVCs it asks to remove.
func (s *sim) reconcileVM(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.vms, ns, name)
	if u == nil {
		return 0, nil
	}
	if u.GetDeletionTimestamp() != nil {
		return 0, s.finalizeVM(ctx, u)
	}
	if !hasString(u.GetFinalizers(), VMFinalizer) {
		_, err := s.updateMeta(ctx, gvrVM, ns, name, func(cur *unstructured.Unstructured) bool {
			if hasString(cur.GetFinalizers(), VMFinalizer) || cur.GetDeletionTimestamp() != nil {
				return false
			}
			cur.SetFinalizers(append(cur.GetFinalizers(), VMFinalizer))
			return true
		})
		return 0, err // the update brings the VM back through the queue
	}
	var vm kubevirtv1.VirtualMachine
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vm); err != nil || vm.Spec.Template == nil {
		return 0, nil //nolint:nilerr // KubeVirt's admitters refuse such a VM; nothing of Harvester's to do
	}
	templates, err := parseClaimTemplates(vm.Annotations[hv.AnnotationVolumeClaimTemplates])
	if err != nil {
		if s.state.once(key, "templates", err.Error()) {
			s.log.Warn("vm: volumeClaimTemplates annotation does not decode", "vm", key, "err", err)
		}
		return 0, nil
	}
	if err := s.storeRunStrategy(ctx, &vm); err != nil {
		return 0, err
	}
	if err := s.syncMaintainModeLabel(ctx, &vm, s.vmiOf(ns, name)); err != nil {
		return 0, err
	}
	return 0, s.ensureClaims(ctx, &vm, templates)
}

// vmiOf returns the cached VMI of a VM, decoded loosely.
func (s *sim) vmiOf(ns, name string) *kubevirtv1.VirtualMachineInstance {
	u := getCached(s.vmis, ns, name)
	if u == nil {
		return nil
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.ObjectMeta = metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		Labels: u.GetLabels(), DeletionTimestamp: u.GetDeletionTimestamp()}
	looseStatus(u, &vmi.Status)
	return vmi
}

// ensureClaims creates the VM's templated PVCs that do not exist yet and
// marks the VM as an owner (annotation harvesterhci.io/owned-by) of every
// PVC it uses, as Harvester does.
func (s *sim) ensureClaims(ctx context.Context, vm *kubevirtv1.VirtualMachine, templates []corev1.PersistentVolumeClaim) error {
	ref := vm.Namespace + "/" + vm.Name
	lister := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(vm.Namespace)
	for _, tpl := range templates {
		if _, err := lister.Get(tpl.Name); err == nil {
			continue
		}
		pvc := tpl.DeepCopy()
		pvc.Namespace = vm.Namespace
		pvc.ResourceVersion, pvc.UID, pvc.Status = "", "", corev1.PersistentVolumeClaimStatus{}
		owned, _, err := addOwner(pvc.Annotations[AnnOwnedBy], ref)
		if err != nil {
			owned, _, _ = addOwner("", ref)
		}
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[AnnOwnedBy] = owned
		if pvc.Spec.StorageClassName == nil {
			if imgRef := pvc.Annotations[hv.AnnotationImageID]; imgRef != "" {
				_, imgName, _ := hv.ParseRef(imgRef, "")
				pvc.Spec.StorageClassName = ptr.To(imageStorageClassName(imgName))
			}
		}
		_, err = s.kube.CoreV1().PersistentVolumeClaims(vm.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pvc %s/%s for vm %s: %w", vm.Namespace, pvc.Name, vm.Name, err)
		}
	}
	for _, claim := range vmiClaimNames(&vm.Spec.Template.Spec) {
		pvc, err := lister.Get(claim)
		if err != nil {
			continue
		}
		if _, changed, err := addOwner(pvc.Annotations[AnnOwnedBy], ref); err != nil || !changed {
			continue
		}
		if err := s.setPVCOwner(ctx, vm.Namespace, claim, ref, true); err != nil {
			return err
		}
	}
	return nil
}

// setPVCOwner adds or removes the VM ref in a PVC's owned-by annotation.
func (s *sim) setPVCOwner(ctx context.Context, ns, name, ref string, add bool) error {
	pvcs := s.kube.CoreV1().PersistentVolumeClaims(ns)
	err := retryConflict(func() error {
		pvc, err := pvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change := removeOwner
		if add {
			change = addOwner
		}
		val, changed, err := change(pvc.Annotations[AnnOwnedBy], ref)
		if err != nil || !changed {
			return err
		}
		if val == "" {
			delete(pvc.Annotations, AnnOwnedBy)
		} else {
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[AnnOwnedBy] = val
		}
		_, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update owner of pvc %s/%s: %w", ns, name, err)
	}
	return nil
}

// finalizeVM is Harvester's OnRemove handler: the PVCs the VM asks to
// remove go, the others lose it as owner; then its finalizer goes.
// (KubeVirt's own finalizer is virt-controller's.)
func (s *sim) finalizeVM(ctx context.Context, u *unstructured.Unstructured) error {
	if !hasString(u.GetFinalizers(), VMFinalizer) {
		return nil
	}
	if err := s.cleanupPVCs(ctx, u); err != nil {
		return err
	}
	_, err := s.updateMeta(ctx, gvrVM, u.GetNamespace(), u.GetName(), func(cur *unstructured.Unstructured) bool {
		if !hasString(cur.GetFinalizers(), VMFinalizer) {
			return false
		}
		cur.SetFinalizers(without(cur.GetFinalizers(), VMFinalizer))
		return true
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// cleanupPVCs deletes the PVCs the VM's annotations ask for and unsets the
// VM as owner of the others.
func (s *sim) cleanupPVCs(ctx context.Context, u *unstructured.Unstructured) error {
	ns, name := u.GetNamespace(), u.GetName()
	ref := ns + "/" + name
	list, err := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	pvcs := make([]corev1.PersistentVolumeClaim, 0, len(list))
	for _, p := range list {
		pvcs = append(pvcs, *p)
	}
	remove := claimsToDelete(u.GetAnnotations(), u.GetLabels(), pvcs)
	for _, claim := range remove {
		err := s.kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, claim, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pvc %s/%s of vm %s: %w", ns, claim, name, err)
		}
		s.log.Info("deleted pvc with its vm", "vm", ref, "pvc", claim)
	}
	for _, p := range pvcs {
		if hasString(remove, p.Name) {
			continue
		}
		if _, changed, err := removeOwner(p.Annotations[AnnOwnedBy], ref); err == nil && changed {
			if err := s.setPVCOwner(ctx, ns, p.Name, ref, false); err != nil {
				return err
			}
		}
	}
	return nil
}
