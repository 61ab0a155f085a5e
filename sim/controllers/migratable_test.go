package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestLiveMigratable: KubeVirt v1.7's virt-handler rules
// (calculateLiveMigrationCondition), reasons and messages as it words them.
func TestLiveMigratable(t *testing.T) {
	claim := func(name string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes}}
	}
	pvcVol := func(name string) kubevirtv1.Volume {
		return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	}
	cloudInit := kubevirtv1.Volume{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{}}}
	vmi := func(f func(*kubevirtv1.VirtualMachineInstance)) *kubevirtv1.VirtualMachineInstance {
		v := &kubevirtv1.VirtualMachineInstance{}
		v.Spec.Volumes = []kubevirtv1.Volume{pvcVol("disk-0"), cloudInit}
		v.Spec.Networks = []kubevirtv1.Network{{Name: "nic-1", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "default/vlan1"}}}}
		v.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{Name: "nic-1", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}}}
		if f != nil {
			f(v)
		}
		return v
	}
	rwx := map[string]*corev1.PersistentVolumeClaim{"disk-0": claim("disk-0", corev1.ReadWriteMany)}
	rwo := map[string]*corev1.PersistentVolumeClaim{"disk-0": claim("disk-0", corev1.ReadWriteOnce)}
	gpu := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "gpu1", DeviceName: "nvidia.com/A100"}}
	}
	podBridge := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Networks = append(v.Spec.Networks, kubevirtv1.Network{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}})
		v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, kubevirtv1.Interface{Name: "default",
			InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}})
	}
	const notShared = "cannot migrate VMI: PVC disk-0 is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)"
	cases := []struct {
		name           string
		vmi            *kubevirtv1.VirtualMachineInstance
		claims         map[string]*corev1.PersistentVolumeClaim
		status         corev1.ConditionStatus
		reason, msgHas string
	}{
		{"RWX disk on a bridged VLAN", vmi(nil), rwx, corev1.ConditionTrue, "", ""},
		{"RWO disk", vmi(nil), rwo, corev1.ConditionFalse, "DisksNotLiveMigratable", notShared},
		{"claim not found", vmi(nil), nil, corev1.ConditionFalse, "DisksNotLiveMigratable", "Unable to determine if PVC disk-0 is shared"},
		{"vGPU", vmi(gpu), rwx, corev1.ConditionFalse, "HostDeviceNotLiveMigratable", "VMI uses a PCI host devices"},
		{"vGPU and RWO: host devices are checked first", vmi(gpu), rwo, corev1.ConditionFalse, "HostDeviceNotLiveMigratable", ""},
		{"host device", vmi(func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "d", DeviceName: "vendor.com/nic"}}
		}), rwx, corev1.ConditionFalse, "HostDeviceNotLiveMigratable", ""},
		{"pod network with bridge binding", vmi(podBridge), rwx, corev1.ConditionFalse, "InterfaceNotLiveMigratable", "does not use masquerade"},
		{"pod network with bridge and the allow annotation", vmi(func(v *kubevirtv1.VirtualMachineInstance) {
			podBridge(v)
			v.Annotations = map[string]string{"kubevirt.io/allow-pod-bridge-network-live-migration": ""}
		}), rwx, corev1.ConditionTrue, "", ""},
		{"pod network with masquerade", vmi(func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Networks = []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}
			v.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}}
		}), rwx, corev1.ConditionTrue, "", ""},
	}
	for _, c := range cases {
		got := liveMigratable(c.vmi, c.claims)
		if got.Type != "LiveMigratable" || got.Status != c.status || got.Reason != c.reason || (c.msgHas != "" && !strings.Contains(got.Message, c.msgHas)) {
			t.Errorf("%s: %+v, want %s %s %q", c.name, got, c.status, c.reason, c.msgHas)
		}
	}
}
