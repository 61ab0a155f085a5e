package harvester

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The virt-launcher pod as KubeVirt v1.7's virt-controller renders it
// (pkg/virt-controller/services/template.go, renderLaunchManifest).
const (
	// launcherContainer is the name of the container that runs the VM.
	launcherContainer = "compute"
	// launcherImage stands for the virt-launcher image (nothing runs it).
	launcherImage = "virt-launcher"
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
//   - the guest-console-log sidecar, an init container that runs beside
//     it, with its requests and limits (consoleLogSidecar);
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
// Not rendered: volumes, security contexts, image pull secrets, the
// devices.kubevirt.io/{kvm,tun,vhost-net} limits, and the containers of
// what the driver's VMs never have (container disks, virtiofs
// filesystems, hook sidecars); nor a runtime class' pod overhead:
// Harvester's KubeVirt CR names no default runtime class.
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
		Containers: []corev1.Container{{Name: launcherContainer, Image: launcherImage,
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}},
		InitContainers:               initContainers(spec),
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

// initContainers are the launcher's init containers: the guest-console-log
// sidecar, when rendered.
func initContainers(spec *kubevirtv1.VirtualMachineInstanceSpec) []corev1.Container {
	if c := consoleLogSidecar(spec); c != nil {
		return []corev1.Container{*c}
	}
	return nil
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
