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
