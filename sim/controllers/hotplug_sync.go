package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/subresources"
)

// applyVolumeRequests moves the VM's status.volumeRequests into its
// template spec (volumes and disks). changed reports a spec update.
func (s *sim) applyVolumeRequests(ctx context.Context, ns, name string) (changed bool, err error) {
	_, err = s.updateMeta(ctx, gvrVM, ns, name, func(cur *unstructured.Unstructured) bool {
		var vm kubevirtv1.VirtualMachine
		if decodeStrict(cur, &vm) != nil || vm.Spec.Template == nil {
			return false
		}
		spec := vm.Spec.Template.Spec.DeepCopy()
		if !applyVolumeRequests(spec, vm.Status.VolumeRequests) {
			return false
		}
		changed = setSpecVolumes(cur, []string{"spec", "template", "spec"}, spec) == nil
		return changed
	})
	return changed, err
}

// syncVMIHotplug brings the VM template's hot-plugged volumes into its VMI
// (and takes removed ones out).
func (s *sim) syncVMIHotplug(ctx context.Context, ns, name string, uid types.UID, tpl *kubevirtv1.VirtualMachineInstanceSpec) error {
	_, err := s.updateMeta(ctx, gvrVMI, ns, name, func(cur *unstructured.Unstructured) bool {
		if cur.GetUID() != uid || cur.GetDeletionTimestamp() != nil {
			return false
		}
		var vmi kubevirtv1.VirtualMachineInstance
		if decodeStrict(cur, &vmi) != nil {
			return false
		}
		if vmi.Status.Phase == kubevirtv1.Succeeded || vmi.Status.Phase == kubevirtv1.Failed {
			return false
		}
		ephemeral := map[string]bool{}
		for _, n := range strings.Split(cur.GetAnnotations()[subresources.AnnEphemeralHotplug], ",") {
			ephemeral[strings.TrimSpace(n)] = true
		}
		spec, changed := syncHotplugVolumes(&vmi.Spec, tpl, ephemeral)
		return changed && setSpecVolumes(cur, []string{"spec"}, spec) == nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// setSpecVolumes writes a spec's volumes and disks into the object at path.
func setSpecVolumes(u *unstructured.Unstructured, path []string, spec *kubevirtv1.VirtualMachineInstanceSpec) error {
	m, err := toUnstructured(spec)
	if err != nil {
		return err
	}
	vols, _, _ := unstructured.NestedSlice(m, "volumes")
	disks, _, _ := unstructured.NestedSlice(m, "domain", "devices", "disks")
	if err := unstructured.SetNestedSlice(u.Object, vols, append(path, "volumes")...); err != nil {
		return err
	}
	return unstructured.SetNestedSlice(u.Object, disks, append(path, "domain", "devices", "disks")...)
}

// shutdownVMI ends the guest of a stop request: phase Succeeded, not
// ready, no interfaces.
func (s *sim) shutdownVMI(ctx context.Context, ns, name string, uid types.UID) error {
	u := getCached(s.vmis, ns, name)
	if u == nil || u.GetUID() != uid {
		return nil
	}
	var old kubevirtv1.VirtualMachineInstanceStatus
	looseStatus(u, &old)
	st := old.DeepCopy()
	now := metav1.Now()
	enterPhase(st, kubevirtv1.Succeeded, now)
	setVMICondition(st, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceReady,
		Status: corev1.ConditionFalse, Reason: "PodTerminating", Message: "the guest was shut down"}, now)
	removeVMICondition(st, kubevirtv1.VirtualMachineInstanceAgentConnected)
	st.Interfaces = nil
	_, err := s.writeStatus(ctx, gvrVMI, u, old, st)
	return err
}
