package controllers

import (
	"fmt"
	"hash/fnv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/subresources"
)

// Volume status reasons and messages of KubeVirt's hot-plug.
const (
	reasonPVCNotFound = "FailedPvcNotFound"
	reasonPVCNotReady = "PVCNotReady"
	reasonVolumeReady = "VolumeReady"
)

// applyVolumeRequests applies the VM's pending volume requests to its
// template spec, as virt-controller does; changed is false once every
// request is already reflected (then the requests can be cleared).
func applyVolumeRequests(spec *kubevirtv1.VirtualMachineInstanceSpec, reqs []kubevirtv1.VirtualMachineVolumeRequest) (changed bool) {
	before := volumeKeys(spec)
	for _, r := range reqs {
		subresources.ApplyVolumeRequest(spec, r)
	}
	return before != volumeKeys(spec)
}

func volumeKeys(spec *kubevirtv1.VirtualMachineInstanceSpec) string {
	var b strings.Builder
	for _, v := range spec.Volumes {
		b.WriteString(v.Name + ",")
	}
	b.WriteString("|")
	for _, d := range spec.Domain.Devices.Disks {
		b.WriteString(d.Name + ",")
	}
	return b.String()
}

func isHotplug(v kubevirtv1.Volume) bool {
	return (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable) ||
		(v.DataVolume != nil && v.DataVolume.Hotpluggable)
}

// syncHotplugVolumes makes the running VMI's hot-plugged volumes follow the
// VM template: those added to the VM (by a volume request or by patching
// the spec, Harvester 1.8's declarative hot-plug) are added with their disk;
// those removed from it are removed, except volumes hot-plugged into the
// VMI alone (ephemeral, named in ephemeral). It returns the new spec and
// whether it changed.
func syncHotplugVolumes(vmi, tpl *kubevirtv1.VirtualMachineInstanceSpec, ephemeral map[string]bool) (*kubevirtv1.VirtualMachineInstanceSpec, bool) {
	out := vmi.DeepCopy()
	inTpl := map[string]kubevirtv1.Volume{}
	for _, v := range tpl.Volumes {
		inTpl[v.Name] = v
	}
	inVMI := map[string]bool{}
	changed := false
	var volumes []kubevirtv1.Volume
	removed := map[string]bool{}
	for _, v := range out.Volumes {
		inVMI[v.Name] = true
		if _, ok := inTpl[v.Name]; !ok && isHotplug(v) && !ephemeral[v.Name] {
			removed[v.Name], changed = true, true
			continue
		}
		volumes = append(volumes, v)
	}
	var disks []kubevirtv1.Disk
	for _, d := range out.Domain.Devices.Disks {
		if !removed[d.Name] {
			disks = append(disks, d)
		}
	}
	for _, v := range tpl.Volumes {
		if !isHotplug(v) || inVMI[v.Name] {
			continue
		}
		volumes = append(volumes, v)
		for _, d := range tpl.Domain.Devices.Disks {
			if d.Name == v.Name {
				disks = append(disks, d)
			}
		}
		changed = true
	}
	out.Volumes, out.Domain.Devices.Disks = volumes, disks
	return out, changed
}

// hotplugVolumeStatus is the VMI's status.volumeStatus for its hot-plugged
// volumes, as virt-controller and virt-handler report them: Pending while
// the claim is missing or not Bound (KubeVirt's reasons), else Ready with
// a SCSI target (sdX, stable across updates), the attachment pod and the
// claim's details. claims holds the namespace's PVCs by name.
func hotplugVolumeStatus(vmiUID types.UID, spec *kubevirtv1.VirtualMachineInstanceSpec, old []kubevirtv1.VolumeStatus,
	claims map[string]*corev1.PersistentVolumeClaim) []kubevirtv1.VolumeStatus {
	prev := map[string]kubevirtv1.VolumeStatus{}
	used := map[string]bool{}
	for _, st := range old {
		prev[st.Name] = st
	}
	sdDisks := 0
	for _, d := range spec.Domain.Devices.Disks {
		if d.Disk != nil && (d.Disk.Bus == kubevirtv1.DiskBusSCSI || d.Disk.Bus == kubevirtv1.DiskBusSATA) {
			sdDisks++
		}
	}
	hot := map[string]bool{}
	for _, v := range spec.Volumes {
		if isHotplug(v) {
			hot[v.Name] = true
			if t := prev[v.Name].Target; t != "" {
				used[t] = true
			}
		}
	}
	for i := 0; i < sdDisks; i++ {
		used[scsiTarget(i)] = true
	}
	var out []kubevirtv1.VolumeStatus
	for _, v := range spec.Volumes {
		if !hot[v.Name] {
			continue
		}
		claim := v.PersistentVolumeClaim
		name := ""
		if claim != nil {
			name = claim.ClaimName
		} else if v.DataVolume != nil {
			name = v.DataVolume.Name
		}
		st := kubevirtv1.VolumeStatus{Name: v.Name, HotplugVolume: &kubevirtv1.HotplugVolumeStatus{}}
		pvc := claims[name]
		switch {
		case pvc == nil:
			st.Phase, st.Reason, st.Message = kubevirtv1.VolumePending, reasonPVCNotFound, fmt.Sprintf("PVC %s not found", name)
		case pvc.Status.Phase != corev1.ClaimBound:
			st.Phase, st.Reason, st.Message = kubevirtv1.VolumePending, reasonPVCNotReady, "PVC is in phase Claim"+string(pvc.Status.Phase)
		default:
			st.Target = prev[v.Name].Target
			if st.Target == "" {
				st.Target = freeTarget(used)
				used[st.Target] = true
			}
			pod := attachmentPod(vmiUID)
			st.Phase, st.Reason = kubevirtv1.VolumeReady, reasonVolumeReady
			st.Message = fmt.Sprintf("Successfully attach hotplugged volume %s to VM", v.Name)
			st.HotplugVolume = &kubevirtv1.HotplugVolumeStatus{AttachPodName: pod, AttachPodUID: types.UID(pod + "-uid")}
			st.PersistentVolumeClaimInfo = &kubevirtv1.PersistentVolumeClaimInfo{
				ClaimName: pvc.Name, AccessModes: pvc.Status.AccessModes, VolumeMode: pvc.Spec.VolumeMode,
				Capacity: pvc.Status.Capacity, Requests: pvc.Spec.Resources.Requests,
			}
		}
		out = append(out, st)
	}
	return out
}

// scsiTarget is the i-th SCSI disk name: sda, sdb, ..., sdz, sdaa, ...
func scsiTarget(i int) string {
	name := ""
	for i++; i > 0; i = (i - 1) / 26 {
		name = string(rune('a'+(i-1)%26)) + name
	}
	return "sd" + name
}

func freeTarget(used map[string]bool) string {
	for i := 0; ; i++ {
		if t := scsiTarget(i); !used[t] {
			return t
		}
	}
}

// attachmentPod names the hot-plug attachment pod as KubeVirt does
// (hp-volume-<5 characters>), stable per VMI.
func attachmentPod(uid types.UID) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	n := h.Sum32()
	b := make([]byte, 5)
	for i := range b {
		b[i] = letters[n%uint32(len(letters))]
		n /= uint32(len(letters))
	}
	return "hp-volume-" + string(b)
}

// stateChangeStep is what the VM controller does for the first pending
// state change request (from virt-api's start/stop/restart): the VMI
// action, and whether the request is done (and dropped). A stop ends the
// guest (phase Succeeded; the VMI stays, as in KubeVirt) unless the run
// strategy is Always, which would start it again: then the VMI is deleted.
// A start replaces a finished VMI with a new one.
func stateChangeStep(req kubevirtv1.VirtualMachineStateChangeRequest, strategy kubevirtv1.VirtualMachineRunStrategy,
	vmi *kubevirtv1.VirtualMachineInstance, blocked bool) (vmiAction, bool) {
	exists := vmi != nil
	deleting := exists && vmi.DeletionTimestamp != nil
	final := exists && (vmi.Status.Phase == kubevirtv1.Succeeded || vmi.Status.Phase == kubevirtv1.Failed)
	switch req.Action {
	case kubevirtv1.StopRequest:
		switch {
		case deleting:
			return actionNone, false
		case exists && !final && (req.UID == nil || *req.UID == vmi.UID):
			if strategy == kubevirtv1.RunStrategyAlways {
				return actionDelete, false
			}
			return actionShutdown, false
		}
		return actionNone, true
	case kubevirtv1.StartRequest:
		switch {
		case deleting:
			return actionNone, false
		case final:
			return actionDelete, false
		case exists:
			return actionNone, true
		case blocked:
			return actionNone, false
		}
		return actionCreate, true
	}
	return actionNone, true // unknown actions are dropped
}

// stateChanges works through the pending state change requests: it drops
// those done and returns the VMI action of the first one still pending.
func stateChanges(reqs []kubevirtv1.VirtualMachineStateChangeRequest, strategy kubevirtv1.VirtualMachineRunStrategy, vmi *kubevirtv1.VirtualMachineInstance, blocked bool) (vmiAction, []kubevirtv1.VirtualMachineStateChangeRequest) {
	for len(reqs) > 0 {
		action, done := stateChangeStep(reqs[0], strategy, vmi, blocked)
		if done {
			reqs = reqs[1:]
		}
		if action != actionNone || !done {
			return action, reqs
		}
	}
	return actionNone, []kubevirtv1.VirtualMachineStateChangeRequest{}
}
