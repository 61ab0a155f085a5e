package harvester

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Memory overhead as KubeVirt v1.7 (Harvester v1.8's) estimates it for a
// VM instance's virt-launcher pod; the pod's memory request and limit are
// the VM's plus this. Harvester's quota rule uses the same estimate for a
// VMI that has only the VM's limits (VMMemoryOverhead).
const (
	mi = 1 << 20
	// launcherProcesses: virt-launcher-monitor 25Mi, virt-launcher 100Mi,
	// virtlogd 25Mi, virtqemud 40Mi, qemu 30Mi.
	launcherProcesses = (25 + 100 + 25 + 40 + 30) * mi
	perVCPU           = 8 * mi
	ioThread          = 8 * mi
	videoRAM          = 32 * mi
	arm64Firmware     = 128 * mi // two 64Mi pflash devices of UEFI on aarch64
	vfioReserve       = 1 << 30  // VFIO (GPUs, host devices) locks guest RAM and the MMIO space
	tpmProcess        = 53 * mi  // swtpm
	dedicatedCPUExtra = 100 * mi // dedicated CPUs or guaranteed QoS
)

// ArchARM64 is the architecture name with the extra firmware overhead.
const ArchARM64 = "arm64"

// LauncherMemoryOverhead is KubeVirt's memory overhead of a VM instance
// with this spec on a host of architecture arch, multiplied by the
// additional-guest-memory-overhead-ratio setting (ratio; see
// EffectiveOverheadRatio).
func LauncherMemoryOverhead(spec *kubevirtv1.VirtualMachineInstanceSpec, arch, ratio string) resource.Quantity {
	d := spec.Domain
	// Page tables: one byte per 512 of the requested memory, kilo-scaled.
	req := d.Resources.Requests.Memory()
	overhead := req.ScaledValue(resource.Kilo) * 1000 / 512
	overhead += launcherProcesses + perVCPU*vcpusOf(spec) + ioThread
	if d.Devices.AutoattachGraphicsDevice == nil || *d.Devices.AutoattachGraphicsDevice {
		overhead += videoRAM
	}
	if arch == ArchARM64 {
		overhead += arm64Firmware
	}
	if len(d.Devices.GPUs) > 0 || len(d.Devices.HostDevices) > 0 || hasSRIOV(spec) {
		overhead += vfioReserve
	}
	if d.Devices.TPM != nil && (d.Devices.TPM.Enabled == nil || *d.Devices.TPM.Enabled) {
		overhead += tpmProcess
	}
	if (d.CPU != nil && d.CPU.DedicatedCPUPlacement) || wantsGuaranteedQoS(d.Resources) {
		overhead += dedicatedCPUExtra
	}
	return multiplyOverhead(overhead, EffectiveOverheadRatio(ratio))
}

// VMMemoryOverhead is the overhead Harvester's quota rule adds to a VM's
// memory limit (pkg/util/resourcequota): KubeVirt's estimate for a VMI that
// has only the VM's limits (no requests, no CPU topology, no devices), on
// Harvester's own architecture.
func VMMemoryOverhead(limits corev1.ResourceList, arch, ratio string) resource.Quantity {
	spec := &kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
		Resources: kubevirtv1.ResourceRequirements{Limits: limits},
	}}
	return LauncherMemoryOverhead(spec, arch, ratio)
}

// EffectiveOverheadRatio is the ratio Harvester applies for a setting
// value: the value when it is a number in [1, 10], else the default 1.5
// (an empty, zero or invalid setting falls back to it).
func EffectiveOverheadRatio(value string) float64 {
	def, _ := strconv.ParseFloat(DefaultMemoryOverheadRatio, 64)
	r, err := strconv.ParseFloat(value, 64)
	if err != nil || r < 1 || r > 10 {
		return def
	}
	return r
}

// overheadRatioSet says whether the setting holds a valid, non-zero ratio:
// then the VM mutator reserves no guest memory by default.
func overheadRatioSet(value string) bool {
	r, err := strconv.ParseFloat(value, 64)
	return value != "" && err == nil && r >= 1 && r <= 10
}

// multiplyOverhead adds (ratio-1) of the kilo-scaled overhead, truncated,
// as KubeVirt does (the kilo-scaled value rounds up).
func multiplyOverhead(overhead int64, ratio float64) resource.Quantity {
	kilo := overhead / 1000
	if overhead%1000 != 0 {
		kilo++
	}
	addition := int64(float64(kilo) * (ratio - 1.0))
	return *resource.NewQuantity(overhead+addition*1000, resource.BinarySI)
}

// vcpusOf is sockets*cores*threads of the CPU topology, else the CPU
// limit or request, at least 1.
func vcpusOf(spec *kubevirtv1.VirtualMachineInstanceSpec) int64 {
	var n int64
	if c := spec.Domain.CPU; c != nil {
		for _, f := range []uint32{c.Sockets, c.Cores, c.Threads} {
			switch {
			case f == 0:
			case n == 0:
				n = int64(f)
			default:
				n *= int64(f)
			}
		}
	} else if l, ok := spec.Domain.Resources.Limits[corev1.ResourceCPU]; ok {
		n = l.Value()
	} else if r, ok := spec.Domain.Resources.Requests[corev1.ResourceCPU]; ok {
		n = r.Value()
	}
	return max(n, 1)
}

func hasSRIOV(spec *kubevirtv1.VirtualMachineInstanceSpec) bool {
	for _, i := range spec.Domain.Devices.Interfaces {
		if i.SRIOV != nil {
			return true
		}
	}
	return false
}

// wantsGuaranteedQoS is KubeVirt's rule: memory requests equal to limits
// (or only a limit) and CPU requests equal to limits.
func wantsGuaranteedQoS(r kubevirtv1.ResourceRequirements) bool {
	memReq, memLim := r.Requests.Memory(), r.Limits.Memory()
	memory := (memReq.IsZero() && !memLim.IsZero()) || (!memReq.IsZero() && memReq.Cmp(*memLim) == 0)
	cpuReq := r.Requests.Cpu()
	return memory && !cpuReq.IsZero() && cpuReq.Cmp(*r.Limits.Cpu()) == 0
}
