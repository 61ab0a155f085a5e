// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's volume status,
// hot-plugged volumes too. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/controller.go.

package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// virt-handler's part of status.volumeStatus (KubeVirt v1.7's
// updateVolumeStatusesFromDomain): virt-controller makes the entries and
// runs the hot-plug attachment Pods; the handler gives each disk in the
// domain its target (vdX for virtio, sdX for SCSI and SATA; hot-plugged
// disks are SCSI) and moves a hot-plugged volume to MountedToPod once its
// attachment Pod runs on the host, then, attached to the domain, to Ready.
// A volume gone from the spec is detached and UnMountedFromPod.

// Reasons of KubeVirt's virt-handler (pkg/virt-handler/controller.go).
const (
	reasonVolumeReady        = "VolumeReady"
	reasonVolumeMountedToPod = "VolumeMountedToPod"
	reasonVolumeUnMounted    = "VolumeUnMountedFromPod"
)

// volumeStatusOf is the VMI's volume status as its virt-handler reports it.
func (s *sim) volumeStatusOf(c *vmiContext) []kubevirtv1.VolumeStatus {
	if len(c.st.VolumeStatus) == 0 {
		return c.st.VolumeStatus
	}
	inSpec := map[string]bool{}
	for _, v := range c.vmi.Spec.Volumes {
		inSpec[v.Name] = true
	}
	out := make([]kubevirtv1.VolumeStatus, len(c.st.VolumeStatus))
	copy(out, c.st.VolumeStatus)
	targets := domainTargets(&c.vmi.Spec, out)
	for i := range out {
		vs := &out[i]
		if vs.HotplugVolume == nil {
			vs.Target = targets[vs.Name]
			continue
		}
		switch {
		case !inSpec[vs.Name]:
			vs.Target = ""
			if vs.Phase == kubevirtv1.VolumeReady || vs.Phase == kubevirtv1.HotplugVolumeMounted || vs.Phase == kubevirtv1.HotplugVolumeAttachedToNode {
				vs.Phase, vs.Reason = kubevirtv1.HotplugVolumeUnMounted, reasonVolumeUnMounted
				vs.Message = fmt.Sprintf("Volume %s has been unmounted from virt-launcher pod", vs.Name)
			}
		case vs.Phase == kubevirtv1.HotplugVolumeMounted || vs.Phase == kubevirtv1.VolumeReady:
			vs.Target = targets[vs.Name]
			vs.Phase, vs.Reason = kubevirtv1.VolumeReady, reasonVolumeReady
			vs.Message = fmt.Sprintf("Successfully attach hotplugged volume %s to VM", vs.Name)
		case (vs.Phase == kubevirtv1.VolumeBound || vs.Phase == kubevirtv1.VolumePending || vs.Phase == kubevirtv1.HotplugVolumeAttachedToNode) &&
			s.attachmentRunning(c, vs):
			vs.Phase, vs.Reason = kubevirtv1.HotplugVolumeMounted, reasonVolumeMountedToPod
			vs.Message = fmt.Sprintf("Volume %s has been mounted in virt-launcher pod", vs.Name)
		}
	}
	return out
}

// attachmentRunning: the volume's hot-plug attachment Pod runs on the
// VMI's host.
func (s *sim) attachmentRunning(c *vmiContext, vs *kubevirtv1.VolumeStatus) bool {
	if vs.HotplugVolume == nil || vs.HotplugVolume.AttachPodName == "" {
		return false
	}
	pod, err := s.kubeInformers.Core().V1().Pods().Lister().Pods(c.u.GetNamespace()).Get(vs.HotplugVolume.AttachPodName)
	return err == nil && pod.Spec.NodeName == c.st.NodeName && pod.Status.Phase == corev1.PodRunning
}

// domainTargets names the disks as libvirt does in the domain: in spec
// order, vdX for virtio, sdX for the other buses; a hot-plugged disk keeps
// the target it got (or takes the next free sdX) once mounted.
func domainTargets(spec *kubevirtv1.VirtualMachineInstanceSpec, status []kubevirtv1.VolumeStatus) map[string]string {
	hot := map[string]kubevirtv1.VolumeStatus{}
	used := map[string]bool{}
	for _, vs := range status {
		if vs.HotplugVolume != nil {
			hot[vs.Name] = vs
			if vs.Target != "" {
				used[vs.Target] = true
			}
		}
	}
	out := map[string]string{}
	next := map[string]int{}
	free := func(prefix string) string {
		for {
			t := prefix + diskLetters(next[prefix])
			next[prefix]++
			if !used[t] {
				used[t] = true
				return t
			}
		}
	}
	var plugged []string
	for _, d := range spec.Domain.Devices.Disks {
		if vs, ok := hot[d.Name]; ok {
			if vs.Target != "" {
				out[d.Name] = vs.Target
			} else {
				plugged = append(plugged, d.Name)
			}
			continue
		}
		out[d.Name] = free(diskPrefix(d))
	}
	for _, name := range plugged {
		out[name] = free("sd")
	}
	return out
}

// diskPrefix is the target device prefix of a disk's bus.
func diskPrefix(d kubevirtv1.Disk) string {
	var bus kubevirtv1.DiskBus
	switch {
	case d.Disk != nil:
		bus = d.Disk.Bus
	case d.CDRom != nil:
		bus = d.CDRom.Bus
		if bus == "" {
			bus = kubevirtv1.DiskBusSATA
		}
	case d.LUN != nil:
		bus = d.LUN.Bus
		if bus == "" {
			bus = kubevirtv1.DiskBusSCSI
		}
	}
	if bus == "" || bus == kubevirtv1.DiskBusVirtio {
		return "vd"
	}
	return "sd"
}

// diskLetters is the i-th disk's letters: a, b, ..., z, aa, ab, ...
func diskLetters(i int) string {
	name := ""
	for i++; i > 0; i = (i - 1) / 26 {
		name = string(rune('a'+(i-1)%26)) + name
	}
	return name
}
