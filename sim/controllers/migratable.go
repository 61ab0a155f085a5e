// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's LiveMigratable
// condition. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/vm.go.

package controllers

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// liveMigratable is the VMI condition LiveMigratable as KubeVirt v1.7's
// virt-handler computes it (calculateLiveMigrationCondition), in its order:
// the pod network's binding, host devices and GPUs, hyperv passthrough,
// then the disks; the first that fails gives the reason. claims are the
// PVCs of the VMI's namespace by name (nil: missing). Not simulated: the
// host-model CPU check, SEV/TDX/Secure Execution, SCSI persistent
// reservations and the TSC-frequency requirement (no simulated VM asks for
// them) and network binding plugins (none is registered).
func liveMigratable(vmi *kubevirtv1.VirtualMachineInstance, claims map[string]*corev1.PersistentVolumeClaim) kubevirtv1.VirtualMachineInstanceCondition {
	no := func(reason, msg string) kubevirtv1.VirtualMachineInstanceCondition {
		return kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceIsMigratable,
			Status: corev1.ConditionFalse, Reason: reason, Message: msg}
	}
	spec := &vmi.Spec
	if !podNetworkMigratable(vmi) {
		return no(kubevirtv1.VirtualMachineInstanceReasonInterfaceNotMigratable,
			"cannot migrate VMI which does not use masquerade, bridge with "+kubevirtv1.AllowPodBridgeNetworkLiveMigrationAnnotation+
				" VM annotation or a migratable plugin to connect to the pod network")
	}
	if len(spec.Domain.Devices.HostDevices) > 0 || len(spec.Domain.Devices.GPUs) > 0 {
		return no(kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable, "VMI uses a PCI host devices")
	}
	if f := spec.Domain.Features; f != nil && f.HypervPassthrough != nil && f.HypervPassthrough.Enabled != nil && *f.HypervPassthrough.Enabled {
		return no(kubevirtv1.VirtualMachineInstanceReasonHypervPassthroughNotMigratable, "VMI uses hyperv passthrough")
	}
	for _, v := range spec.Volumes {
		var name string
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.DataVolume != nil:
			name = v.DataVolume.Name
		case v.HostDisk != nil && (v.HostDisk.Shared == nil || !*v.HostDisk.Shared):
			return no(kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable, "cannot migrate VMI with non-shared HostDisk")
		default:
			continue
		}
		pvc := claims[name]
		if pvc == nil {
			return no(kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable, fmt.Sprintf(
				"cannot migrate VMI: Unable to determine if PVC %s is shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)", name))
		}
		// KubeVirt copies the claim's spec.accessModes into the volume status.
		if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
			return no(kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable, fmt.Sprintf(
				"cannot migrate VMI: PVC %s is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)", name))
		}
	}
	return kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}
}

// podNetworkMigratable: no interface, no pod network, the pod network with
// masquerade, or with bridge and the VMI annotation allowing it.
func podNetworkMigratable(vmi *kubevirtv1.VirtualMachineInstance) bool {
	ifaces := vmi.Spec.Domain.Devices.Interfaces
	if len(ifaces) == 0 {
		return true
	}
	var pod string
	for _, n := range vmi.Spec.Networks {
		if n.Pod != nil {
			pod = n.Name
		}
	}
	if pod == "" {
		return true
	}
	for _, i := range ifaces {
		if i.Name != pod {
			continue
		}
		_, allowBridge := vmi.Annotations[kubevirtv1.AllowPodBridgeNetworkLiveMigrationAnnotation]
		return i.Masquerade != nil || (allowBridge && i.Bridge != nil)
	}
	return true
}
