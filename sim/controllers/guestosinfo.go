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
// is connected (updateGuestInfoFromDomain): from the annotation of the
// image behind its first disk that has one (else the image's OS type
// label as id and name).
func (s *sim) guestOSInfo(c *vmiContext) kubevirtv1.VirtualMachineInstanceGuestOSInfo {
	lister := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(c.u.GetNamespace())
	for _, claim := range vmiClaimNames(&c.vmi.Spec) {
		pvc, err := lister.Get(claim)
		if err != nil {
			continue
		}
		ns, name, err := hv.ParseRef(pvc.Annotations[hv.AnnotationImageID], c.u.GetNamespace())
		if err != nil {
			continue
		}
		img := getCached(s.images, ns, name)
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
		return info.OS
	}
	return kubevirtv1.VirtualMachineInstanceGuestOSInfo{}
}
