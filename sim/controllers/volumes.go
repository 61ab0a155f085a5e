package controllers

import (
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// vmiClaimNames lists the PVCs a VMI spec mounts (persistentVolumeClaim and
// dataVolume volumes; a DataVolume's PVC has its name).
func vmiClaimNames(spec *kubevirtv1.VirtualMachineInstanceSpec) []string {
	var out []string
	for _, v := range spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.DataVolume != nil:
			out = append(out, v.DataVolume.Name)
		}
	}
	return out
}

// imageCheck is what the start check knows about one image.
type imageCheck struct {
	Found    bool
	Imported bool
	Message  string // why not imported
}
