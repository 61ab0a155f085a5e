package controllers

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestVMIClaimNames(t *testing.T) {
	spec := &kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
		{Name: "disk-0", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-a"}}}},
		{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "x"}}},
		{Name: "dv", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "dv-b"}}},
	}}
	if got := vmiClaimNames(spec); !reflect.DeepEqual(got, []string{"pvc-a", "dv-b"}) {
		t.Errorf("got %v", got)
	}
}
