package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// VMFinalizer is Harvester v1.8's VM controller's (a wrangler OnRemove
// handler, VMController.CleanupPVCAndSnapshot): the PVCs the VM's
// annotation names are deleted before the VM goes.
const VMFinalizer = "wrangler.cattle.io/VMController.CleanupPVCAndSnapshot"

// vmFinalizers are added to every VM: Harvester's, and KubeVirt's VM
// controller's (kubevirt.io/virtualMachineControllerFinalize), which keeps
// a deleted VM until its VMI is gone.
var vmFinalizers = []string{VMFinalizer, kubevirtv1.VirtualMachineControllerFinalizer}

// reconcileVM runs a VM's VMI by its run strategy, provisions its disks
// and computes its status; on deletion it removes the PVCs the VM asks for.
func (s *sim) reconcileVM(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.vms, ns, name)
	if u == nil {
		return 0, nil
	}
	if u.GetDeletionTimestamp() != nil {
		return 0, s.finalizeVM(ctx, u)
	}
	if missing(u.GetFinalizers(), vmFinalizers) != nil {
		_, err := s.updateMeta(ctx, gvrVM, ns, name, func(cur *unstructured.Unstructured) bool {
			add := missing(cur.GetFinalizers(), vmFinalizers)
			if add == nil || cur.GetDeletionTimestamp() != nil {
				return false
			}
			cur.SetFinalizers(append(cur.GetFinalizers(), add...))
			return true
		})
		return 0, err // the update brings the VM back through the queue
	}

	var prev kubevirtv1.VirtualMachineStatus
	looseStatus(u, &prev)
	in := vmStatusInput{Generation: u.GetGeneration(), Previous: prev, Now: metav1.Now()}
	in.VMI = s.vmiOf(ns, name)

	var vm kubevirtv1.VirtualMachine
	if err := decodeStrict(u, &vm); err != nil {
		in.SpecError = fmt.Errorf("spec does not decode as kubevirt.io/v1 VirtualMachine: %w", err)
		return 0, s.writeVMStatus(ctx, u, in)
	}
	strategy, err := vm.RunStrategy()
	templates, tplErr := parseClaimTemplates(vm.Annotations[hv.AnnotationVolumeClaimTemplates])
	var specErrs []error
	if err != nil {
		specErrs = append(specErrs, fmt.Errorf("spec.running and spec.runStrategy: %w", err))
	}
	if vm.Spec.Template == nil {
		specErrs = append(specErrs, errors.New("spec.template is required"))
	}
	if tplErr != nil {
		specErrs = append(specErrs, tplErr)
	}
	if len(specErrs) > 0 {
		in.SpecError = errors.Join(specErrs...)
		return 0, s.writeVMStatus(ctx, u, in)
	}
	if err := s.syncMaintainModeLabel(ctx, &vm, in.VMI); err != nil {
		return 0, err
	}
	in.Strategy = strategy
	in.WantRunning = strategy == kubevirtv1.RunStrategyAlways || strategy == kubevirtv1.RunStrategyRerunOnFailure

	if len(vm.Status.VolumeRequests) > 0 {
		if changed, err := s.applyVolumeRequests(ctx, ns, name); err != nil || changed {
			return 0, err // the spec update brings the VM back through the queue
		}
	}
	if err := s.ensureClaims(ctx, &vm, templates); err != nil {
		return 0, err
	}
	in.Block = s.startBlockOf(&vm, templates)
	var action vmiAction
	pending := vm.Status.StateChangeRequests
	if len(pending) > 0 {
		action, pending = stateChanges(pending, strategy, in.VMI, in.Block != nil)
	} else if action, err = decideVMIAction(strategy, in.VMI, in.Block != nil); err != nil {
		in.SpecError = err
		return 0, s.writeVMStatus(ctx, u, in)
	}
	in.StateChangeRequests, in.Reconciled = pending, true
	if in.VMI != nil && action == actionNone {
		if err := s.syncVMIHotplug(ctx, ns, name, in.VMI.UID, &vm.Spec.Template.Spec); err != nil {
			return 0, err
		}
	}
	switch action {
	case actionCreate:
		created, err := s.createVMI(ctx, &vm)
		if err != nil {
			return 0, err
		}
		if created == nil { // the cached VM is gone or being deleted
			return 0, nil
		}
		in.VMI = created
		s.event.emit(u, corev1.EventTypeNormal, "SuccessfulCreate",
			"Started the virtual machine by creating the new virtual machine instance "+name)
	case actionShutdown:
		if err := s.shutdownVMI(ctx, ns, name, in.VMI.UID); err != nil {
			return 0, err
		}
		s.event.emit(u, corev1.EventTypeNormal, "SuccessfulShutdown", "The virtual machine instance "+name+" was shut down")
	case actionDelete:
		err := s.dyn.Resource(gvrVMI).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &in.VMI.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("delete vmi %s: %w", key, err)
		}
		s.event.emit(u, corev1.EventTypeNormal, "SuccessfulDelete",
			"Stopped the virtual machine by deleting the virtual machine instance "+string(in.VMI.UID))
	}
	return 0, s.writeVMStatus(ctx, u, in)
}

func (s *sim) writeVMStatus(ctx context.Context, u *unstructured.Unstructured, in vmStatusInput) error {
	st := computeVMStatus(in)
	if in.Reconciled {
		st.VolumeRequests = nil // applied to the spec before the status is written
		st.StateChangeRequests = in.StateChangeRequests
	}
	_, err := s.writeStatus(ctx, gvrVM, u, in.Previous, st)
	return err
}

// vmiOf returns the cached VMI of a VM, decoded loosely (its spec was
// produced by the simulator or is checked by the VMI controller).
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

// createVMI creates the VMI from the VM template: same name, template
// labels and annotations, controller owner reference to the VM. It
// returns nil, nil when the VM is no longer live on the API server.
func (s *sim) createVMI(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{
			Name: vm.Name, Namespace: vm.Namespace,
			Labels:      maps.Clone(vm.Spec.Template.ObjectMeta.Labels),
			Annotations: maps.Clone(vm.Spec.Template.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine",
				Name: vm.Name, UID: vm.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *vm.Spec.Template.Spec.DeepCopy(),
	}
	// The VM informer may lag behind the VMI informer: a VMI that the
	// garbage collector just deleted because its VM is gone would be made
	// again for a VM that only the cache still holds. Like KubeVirt, create
	// only for a VM that is live on the API server.
	live, err := s.dyn.Resource(gvrVM).Namespace(vm.Namespace).Get(ctx, vm.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read vm %s/%s before creating its vmi: %w", vm.Namespace, vm.Name, err)
	case live.GetUID() != vm.UID || live.GetDeletionTimestamp() != nil:
		return nil, nil
	}
	m, err := toUnstructured(vmi)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	res, err := s.dyn.Resource(gvrVMI).Namespace(vm.Namespace).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create vmi %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	vmi.UID = res.GetUID()
	return vmi, nil
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

// startBlockOf gathers the VM's claims and images and asks volumeBlock.
func (s *sim) startBlockOf(vm *kubevirtv1.VirtualMachine, templates []corev1.PersistentVolumeClaim) *startBlock {
	lister := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(vm.Namespace)
	claims := vmiClaimNames(&vm.Spec.Template.Spec)
	pvcs := map[string]*corev1.PersistentVolumeClaim{}
	images := map[string]imageCheck{}
	checkImage := func(ref string) {
		if ref == "" {
			return
		}
		if _, done := images[ref]; done {
			return
		}
		images[ref] = s.checkImage(ref)
	}
	for _, c := range claims {
		if pvc, err := lister.Get(c); err == nil {
			pvcs[c] = pvc
			checkImage(pvc.Annotations[hv.AnnotationImageID])
		}
	}
	for _, t := range templates {
		checkImage(t.Annotations[hv.AnnotationImageID])
	}
	return volumeBlock(claims, templates, pvcs, images)
}

// checkImage looks an image ("ns/name") up in the cache.
func (s *sim) checkImage(ref string) imageCheck {
	ns, name, err := hv.ParseRef(ref, "")
	if err != nil {
		return imageCheck{}
	}
	u := getCached(s.images, ns, name)
	if u == nil {
		return imageCheck{}
	}
	var img harvesterv1.VirtualMachineImage
	img.Namespace, img.Name = ns, name
	looseStatus(u, &img.Status)
	ok, msg := imageImported(&img)
	return imageCheck{Found: true, Imported: ok, Message: msg}
}

// finalizeVM plays both controllers' parts in a VM's deletion: Harvester's
// (cleanupPVCs) and KubeVirt's, which deletes the VMI and releases the VM
// only once the VMI is gone from its cache, or at once when the VM's
// dependents are orphaned. The VMI's events bring the VM back here.
func (s *sim) finalizeVM(ctx context.Context, u *unstructured.Unstructured) error {
	ns, name := u.GetNamespace(), u.GetName()
	var release []string
	if hasString(u.GetFinalizers(), VMFinalizer) {
		if err := s.cleanupPVCs(ctx, u); err != nil {
			return err
		}
		release = append(release, VMFinalizer)
	}
	if hasString(u.GetFinalizers(), kubevirtv1.VirtualMachineControllerFinalizer) {
		// Only a VMI this VM controls counts: one the garbage collector
		// orphaned has lost its controller reference (and a deleted VM
		// adopts nothing).
		vmi := getCached(s.vmis, ns, name)
		if vmi != nil && !controlledBy(vmi, u.GetUID()) {
			vmi = nil
		}
		switch {
		case vmi == nil || hasString(u.GetFinalizers(), metav1.FinalizerOrphanDependents):
			release = append(release, kubevirtv1.VirtualMachineControllerFinalizer)
		case vmi.GetDeletionTimestamp() == nil:
			uid := vmi.GetUID()
			err := s.dyn.Resource(gvrVMI).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("delete vmi %s/%s of the deleted vm: %w", ns, name, err)
			}
			s.event.emit(u, corev1.EventTypeNormal, "SuccessfulDelete",
				"Stopped the virtual machine by deleting the virtual machine instance "+string(uid))
		}
	}
	if len(release) == 0 {
		return nil
	}
	_, err := s.updateMeta(ctx, gvrVM, ns, name, func(cur *unstructured.Unstructured) bool {
		kept := cur.GetFinalizers()
		for _, f := range release {
			kept = without(kept, f)
		}
		if len(kept) == len(cur.GetFinalizers()) {
			return false
		}
		cur.SetFinalizers(kept)
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
