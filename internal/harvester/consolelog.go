package harvester

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt v1.7's guest-console-log sidecar of the virt-launcher pod
// (pkg/virt-controller/services/serialconsolelog.go,
// generateSerialConsoleLogContainer): a restartable init container that
// streams the serial console's log, so it runs, and is charged, beside the
// compute container. virt-controller adds it unless the VMI turns its
// serial console off (autoattachSerialConsole false) or says
// logSerialConsole false; when the VMI says nothing, unless the KubeVirt CR
// turns the log off for all VMs (virtualMachineOptions.disableSerialConsoleLog).
// Its resources are KubeVirt's defaults unless the CR's
// supportContainerResources names the guest-console-log type. Harvester
// v1.8's KubeVirt CR (its chart's kubevirt spec, and what its setting
// controllers write into it) sets neither, so a VM of Harvester's that says
// nothing has the sidecar with the defaults.
const (
	// ConsoleLogContainer is the sidecar's container name.
	ConsoleLogContainer     = "guest-console-log"
	consoleLogCPURequest    = "5m"
	consoleLogMemoryRequest = "35M"
	consoleLogCPULimit      = "15m"
	consoleLogMemoryLimit   = "60M"
)

// consoleLogSidecar is the guest-console-log container virt-controller
// renders for a VMI of spec on Harvester, nil when it renders none. With
// dedicated CPUs or guaranteed QoS its requests are its limits
// (resourcesForSerialConsoleLogContainer).
func consoleLogSidecar(spec *kubevirtv1.VirtualMachineInstanceSpec) *corev1.Container {
	dev := spec.Domain.Devices
	if dev.AutoattachSerialConsole != nil && !*dev.AutoattachSerialConsole {
		return nil
	}
	if dev.LogSerialConsole != nil && !*dev.LogSerialConsole {
		return nil
	}
	limits := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(consoleLogCPULimit),
		corev1.ResourceMemory: resource.MustParse(consoleLogMemoryLimit),
	}
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(consoleLogCPURequest),
		corev1.ResourceMemory: resource.MustParse(consoleLogMemoryRequest),
	}
	if cpu := spec.Domain.CPU; (cpu != nil && cpu.DedicatedCPUPlacement) || wantsGuaranteedQoS(spec.Domain.Resources) {
		requests = limits.DeepCopy()
	}
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.Container{Name: ConsoleLogContainer, Image: launcherImage, RestartPolicy: &always,
		Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}
