// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's
// status.guestOSInfo from the guest agent. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/vm.go.

package controllers

import (
	"encoding/json"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// AnnotationGuestOS on a VirtualMachineImage is what qemu-guest-agent in a
// guest booted from it reports (a JSON VirtualMachineInstanceGuestAgentInfo:
// guestAgentVersion, os{name, id, prettyName, version, versionId,
// kernelRelease, kernelVersion, machine}, timezone). The simulator's own
// annotation: real images carry no such thing, their guests report it.
const AnnotationGuestOS = "sim.harvesterhci.io/guest-os"

// LabelOSType is Harvester's image label naming the operating system.
const LabelOSType = "harvesterhci.io/os-type"

// guestOSInfo is virt-handler's status.guestOSInfo of a guest whose agent
// is connected (updateGuestInfoFromDomain): the OS of guestAgentInfo.
func (s *sim) guestOSInfo(c *vmiContext) kubevirtv1.VirtualMachineInstanceGuestOSInfo {
	return s.guestAgentInfo(c.u.GetNamespace(), &c.vmi.Spec).OS
}

// guestAgentInfo is what the guest's qemu-guest-agent reports: from the
// annotation of the image behind the first disk that has one (else the
// image's OS type label as OS id and name); the hostname is the one
// KubeVirt's cloud-init metadata gives the guest (spec.hostname, else the
// VMI's name), filled in by the caller.
func (s *sim) guestAgentInfo(ns string, spec *kubevirtv1.VirtualMachineInstanceSpec) kubevirtv1.VirtualMachineInstanceGuestAgentInfo {
	lister := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns)
	for _, claim := range vmiClaimNames(spec) {
		pvc, err := lister.Get(claim)
		if err != nil {
			continue
		}
		imgNS, name, err := hv.ParseRef(pvc.Annotations[hv.AnnotationImageID], ns)
		if err != nil {
			continue
		}
		img := getCached(s.images, imgNS, name)
		if img == nil {
			continue
		}
		var info kubevirtv1.VirtualMachineInstanceGuestAgentInfo
		if err := json.Unmarshal([]byte(img.GetAnnotations()[AnnotationGuestOS]), &info); err != nil {
			info = kubevirtv1.VirtualMachineInstanceGuestAgentInfo{}
		}
		if info.OS.ID == "" {
			info.OS.ID = img.GetLabels()[LabelOSType]
		}
		if info.OS.Name == "" {
			info.OS.Name = info.OS.ID
		}
		return info
	}
	return kubevirtv1.VirtualMachineInstanceGuestAgentInfo{}
}
