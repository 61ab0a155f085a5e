// Package launcherpod is the virt-launcher Pod the simulator's own launcher
// controller (sim/controllers/launcher.go) renders until KubeVirt's
// virt-controller renders it (issue 39 part 1). It was moved here from
// internal/harvester unchanged, so that sim/ imports no rule of the
// product; it goes with launcher.go.
package launcherpod

import (
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The virt-launcher pod as KubeVirt v1.7's virt-controller renders it
// (pkg/virt-controller/services/template.go, renderLaunchManifest).
const (
	// LauncherContainer is the name of the container that runs the VM.
	LauncherContainer = "compute"
	// LauncherImage stands for the virt-launcher image (nothing runs it).
	LauncherImage = "virt-launcher"
	// launcherEphemeralStorage is the ephemeral storage KubeVirt adds to
	// the compute container's request (ephemeralStorageOverheadSize).
	launcherEphemeralStorage = "50M"
	// gracePeriodPadding is added twice to the VMI's grace period.
	gracePeriodPadding = 15
	// labelCPUManager is the node label of hosts whose kubelet runs the
	// static CPU manager, required for dedicated CPUs.
	labelCPUManager = kubevirtv1.CPUManager
)

// LauncherPod is the spec of the virt-launcher pod KubeVirt v1.7 renders
// for a VMI of spec on a host of architecture arch with the
// additional-guest-memory-overhead-ratio setting ratio: what quota
// admission reads and kube-scheduler places. It carries
//   - the compute container's requests and limits (LauncherResources, the
//     50M of ephemeral storage KubeVirt adds, and one of each device-plugin
//     GPU and host device, as request and limit);
//   - nodeSelector: kubevirt.io/schedulable "true", kubernetes.io/arch of
//     spec.architecture, the machine type's and CPU model's and required
//     CPU features' node-labeller labels, cpumanager "true" for dedicated
//     CPUs, then the VMI's own nodeSelector over them;
//   - the VMI's affinity, with KubeVirt's required node affinity that
//     rejects hosts labelled node-labeller.kubevirt.io/obsolete-host-model
//     (host-model CPU) and hosts with a forbidden CPU feature, added to
//     each term;
//   - the VMI's tolerations, topology spread constraints, priority class,
//     scheduler name, DNS policy/config, subdomain and hostname
//     (spec.hostname), restart policy Never, the VMI's grace period plus
//     30 s, the readiness gate kubevirt.io/virtual-machine-unpaused, no
//     service links and no service-account token.
//
// Not rendered (the simulator has no kubelet and runs no containers):
// volumes, init and sidecar containers, security contexts, image pull
// secrets and the devices.kubevirt.io/{kvm,tun,vhost-net} limits.
// KubeVirt sets no activeDeadlineSeconds, so the pod is NotTerminating,
// and it always requests memory, so it is NotBestEffort. (The API
// server's Priority admission gives a pod without a class the cluster's
// globalDefault PriorityClass, if there is one; that class is not known
// here.)
func LauncherPod(spec *kubevirtv1.VirtualMachineInstanceSpec, arch, ratio string) *corev1.Pod {
	requests, limits := LauncherResources(spec, arch, ratio)
	requests[corev1.ResourceEphemeralStorage] = resource.MustParse(launcherEphemeralStorage)
	for _, g := range spec.Domain.Devices.GPUs {
		if g.DeviceName != "" && g.ClaimRequest == nil {
			bump(requests, limits, corev1.ResourceName(g.DeviceName))
		}
	}
	for _, d := range spec.Domain.Devices.HostDevices {
		if d.DeviceName != "" && d.ClaimRequest == nil {
			bump(requests, limits, corev1.ResourceName(d.DeviceName))
		}
	}
	grace := int64(kubevirtv1.DefaultGracePeriodSeconds)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	grace += 2 * gracePeriodPadding
	no := false
	return &corev1.Pod{Spec: corev1.PodSpec{
		Hostname:                      spec.Hostname,
		Subdomain:                     spec.Subdomain,
		TerminationGracePeriodSeconds: &grace,
		RestartPolicy:                 corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: LauncherContainer, Image: LauncherImage,
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}},
		NodeSelector:                 launcherNodeSelector(spec),
		DNSConfig:                    spec.DNSConfig.DeepCopy(),
		DNSPolicy:                    spec.DNSPolicy,
		ReadinessGates:               []corev1.PodReadinessGate{{ConditionType: kubevirtv1.VirtualMachineUnpaused}},
		EnableServiceLinks:           &no,
		AutomountServiceAccountToken: &no,
		SchedulerName:                spec.SchedulerName,
		Tolerations:                  append([]corev1.Toleration(nil), spec.Tolerations...),
		TopologySpreadConstraints:    append([]corev1.TopologySpreadConstraint(nil), spec.TopologySpreadConstraints...),
		PriorityClassName:            spec.PriorityClassName,
		Affinity:                     launcherAffinity(spec),
	}}
}

func bump(requests, limits corev1.ResourceList, name corev1.ResourceName) {
	for _, l := range []corev1.ResourceList{requests, limits} {
		q := l[name]
		q.Add(*resource.NewQuantity(1, resource.DecimalSI))
		l[name] = q
	}
}

// launcherNodeSelector is NodeSelectorRenderer's result for the VMI
// (hyper-V strict checks, TSC frequency, realtime and confidential
// computing aside: no simulated VM uses them).
func launcherNodeSelector(spec *kubevirtv1.VirtualMachineInstanceSpec) map[string]string {
	sel := map[string]string{kubevirtv1.NodeSchedulable: "true"}
	if spec.Architecture != "" {
		sel[corev1.LabelArchStable] = strings.ToLower(spec.Architecture)
	}
	maps.Copy(sel, spec.NodeSelector)
	cpu := spec.Domain.CPU
	if cpu != nil && cpu.DedicatedCPUPlacement {
		sel[labelCPUManager] = "true"
	}
	if cpu != nil && cpu.Model != "" && cpu.Model != kubevirtv1.CPUModeHostModel && cpu.Model != kubevirtv1.CPUModeHostPassthrough {
		sel[kubevirtv1.CPUModelLabel+cpu.Model] = "true"
	}
	if m := spec.Domain.Machine; m != nil && m.Type != "" {
		sel[kubevirtv1.SupportedMachineTypeLabel+m.Type] = "true"
	}
	if cpu != nil && cpu.Model != "" {
		for _, f := range cpu.Features {
			if f.Policy == "" || f.Policy == "require" {
				sel[kubevirtv1.CPUFeatureLabel+f.Name] = "true"
			}
		}
	}
	return sel
}

// launcherAffinity is the VMI's affinity with KubeVirt's node rejections.
func launcherAffinity(spec *kubevirtv1.VirtualMachineInstanceSpec) *corev1.Affinity {
	aff := spec.Affinity.DeepCopy()
	cpu := spec.Domain.CPU
	if cpu == nil || cpu.Model == "" || cpu.Model == kubevirtv1.CPUModeHostModel {
		aff = rejectNodeLabel(aff, kubevirtv1.NodeHostModelIsObsoleteLabel)
	}
	if cpu != nil {
		for _, f := range cpu.Features {
			if f.Policy == "forbid" {
				aff = rejectNodeLabel(aff, kubevirtv1.CPUFeatureLabel+f.Name)
			}
		}
	}
	return aff
}

// rejectNodeLabel adds "label DoesNotExist" to every required node
// affinity term (they are ORed), or makes it the one term.
func rejectNodeLabel(aff *corev1.Affinity, label string) *corev1.Affinity {
	req := corev1.NodeSelectorRequirement{Key: label, Operator: corev1.NodeSelectorOpDoesNotExist}
	if aff == nil {
		aff = &corev1.Affinity{}
	}
	if aff.NodeAffinity == nil {
		aff.NodeAffinity = &corev1.NodeAffinity{}
	}
	sel := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if sel == nil {
		aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}}}
		return aff
	}
	for i := range sel.NodeSelectorTerms {
		sel.NodeSelectorTerms[i].MatchExpressions = append(sel.NodeSelectorTerms[i].MatchExpressions, req)
	}
	return aff
}

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
	def, _ := strconv.ParseFloat(defaultMemoryOverheadRatio, 64)
	r, err := strconv.ParseFloat(value, 64)
	if err != nil || r < 1 || r > 10 {
		return def
	}
	return r
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

// LauncherResources is what the virt-launcher pod of a VMI with this spec
// asks of the namespace's quotas (its compute container, as KubeVirt
// renders it): the VMI's CPU, or whole vCPUs when dedicated (one more for
// an isolated emulator thread, and the memory limit equal to the request),
// and its memory plus the overhead.
func LauncherResources(spec *kubevirtv1.VirtualMachineInstanceSpec, arch, ratio string) (requests, limits corev1.ResourceList) {
	r := spec.Domain.Resources
	requests, limits = corev1.ResourceList{}, corev1.ResourceList{}
	if c, ok := r.Requests[corev1.ResourceCPU]; ok {
		requests[corev1.ResourceCPU] = c
	}
	if c, ok := r.Limits[corev1.ResourceCPU]; ok {
		limits[corev1.ResourceCPU] = c
	}
	overhead := LauncherMemoryOverhead(spec, arch, ratio)
	req := r.Requests.Memory().DeepCopy()
	req.Add(overhead)
	requests[corev1.ResourceMemory] = req
	if l, ok := r.Limits[corev1.ResourceMemory]; ok {
		l = l.DeepCopy()
		l.Add(overhead)
		limits[corev1.ResourceMemory] = l
	}
	if cpu := spec.Domain.CPU; cpu != nil && cpu.DedicatedCPUPlacement {
		n := vcpusOf(spec)
		if cpu.IsolateEmulatorThread {
			n++
		}
		requests[corev1.ResourceCPU] = *resource.NewQuantity(n, resource.DecimalSI)
		limits[corev1.ResourceCPU] = *resource.NewQuantity(n, resource.DecimalSI)
		limits[corev1.ResourceMemory] = req // KubeVirt aligns the memory limit with the request
	}
	return requests, limits
}

// defaultMemoryOverheadRatio is the default of Harvester's setting
// additional-guest-memory-overhead-ratio (pkg/settings/settings_helper.go).
const defaultMemoryOverheadRatio = "1.5"
