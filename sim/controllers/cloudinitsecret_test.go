package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestCloudInitSecrets: every Secret a cloud-init volume refers to (user
// and network data, NoCloud and ConfigDrive) is one the launcher pod
// mounts; inline data and other volumes mount none.
func TestCloudInitSecrets(t *testing.T) {
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	spec := &kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
		{Name: "disk-0", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{}}},
		{Name: "cloudinitdisk", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{
			UserDataSecretRef: ref("m-cloudinit"), NetworkDataSecretRef: ref("m-cloudinit")}}},
		{Name: "drive", VolumeSource: kubevirtv1.VolumeSource{CloudInitConfigDrive: &kubevirtv1.CloudInitConfigDriveSource{
			UserDataSecretRef: ref("z-user"), NetworkDataSecretRef: ref("a-net")}}},
		{Name: "inline", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
	}}
	if got, want := cloudInitSecrets(spec), []string{"a-net", "m-cloudinit", "z-user"}; !slices.Equal(got, want) {
		t.Errorf("cloudInitSecrets = %v, want %v", got, want)
	}
	if got := cloudInitSecrets(&kubevirtv1.VirtualMachineInstanceSpec{}); len(got) != 0 {
		t.Errorf("no volumes: %v", got)
	}
}
