package harvester

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// AnnotationSkipQuotaAutoScaling "true" on Rancher's default ResourceQuota
// stops Harvester's resourcequota controller from scaling it
// (pkg/util/constants.go AnnotationSkipResourceQuotaAutoScaling).
const AnnotationSkipQuotaAutoScaling = "harvesterhci.io/skipResourceQuotaAutoScaling"

// RancherQuota is the namespace annotation AnnotationRancherResourceQuota:
// a Rancher project's limits for the namespace.
type RancherQuota struct {
	Limit struct {
		LimitsCPU       string `json:"limitsCpu"`
		LimitsMemory    string `json:"limitsMemory"`
		RequestsStorage string `json:"requestsStorage"`
	} `json:"limit"`
}

// ParseRancherQuota reads the annotation; false when it is empty or not
// JSON (Harvester then skips the namespace).
func ParseRancherQuota(annotation string) (RancherQuota, bool) {
	var q RancherQuota
	if annotation == "" || json.Unmarshal([]byte(annotation), &q) != nil {
		return q, false
	}
	return q, true
}

// MigratingUsage sums the resource lists Harvester records on Rancher's
// default quota for migrating VMs (annotations AnnotationMigratingUIDPrefix
// and AnnotationMigratingNamePrefix); false when one is not a resource
// list (Harvester's GetVMIMResourcesFromRQAnnotation fails on it; the sum
// leaves it out).
func MigratingUsage(rq *corev1.ResourceQuota) (corev1.ResourceList, bool) {
	sum, ok := corev1.ResourceList{}, true
	for k, v := range rq.Annotations {
		if !strings.HasPrefix(k, AnnotationMigratingUIDPrefix) && !strings.HasPrefix(k, AnnotationMigratingNamePrefix) {
			continue
		}
		var rl corev1.ResourceList
		if json.Unmarshal([]byte(v), &rl) != nil {
			ok = false
			continue
		}
		for n, q := range rl {
			s := sum[n]
			s.Add(q)
			sum[n] = s
		}
	}
	return sum, ok
}

// DefaultQuota is the ResourceQuota of the namespace labelled
// LabelDefaultResourceQuota that Harvester scales (the first it lists; by
// name here), nil when there is none.
func DefaultQuota(quotas []corev1.ResourceQuota) *corev1.ResourceQuota {
	var out *corev1.ResourceQuota
	for i := range quotas {
		q := &quotas[i]
		if q.Labels[LabelDefaultResourceQuota] == "true" && (out == nil || q.Name < out.Name) {
			out = q
		}
	}
	return out
}

// MigrationHard is the hard limits of quota q (one of the VMI's
// namespace's quotas) in force while KubeVirt creates the migration target
// pod of vmi, as Harvester v1.8 makes room for it:
//   - its migration controller (pkg/controller/master/migration,
//     scaleResourceQuotaWithVMI), when the migration is Pending, records on
//     the namespace's default quota (DefaultQuota) the VMI's CPU limit and
//     its memory limit plus KubeVirt's overhead, for each of limits.cpu and
//     limits.memory the quota has (checkResourceQuotaAndVMI: the quota has
//     one of them non-zero, the VMI a CPU or memory limit);
//   - its resourcequota controller then sets that quota's limits.cpu and
//     limits.memory to the Rancher project's limits on the namespace
//     (nsAnnotation, AnnotationRancherResourceQuota) plus every recorded
//     migration, each where the project's limit is non-zero; unless the
//     quota carries AnnotationSkipQuotaAutoScaling, the annotation is
//     missing or invalid, or a recorded migration does not parse.
//
// Every other quota keeps what it has (its status.hard, else its spec).
// arch is the host architecture, ratio the overhead ratio setting.
func MigrationHard(q *corev1.ResourceQuota, quotas []corev1.ResourceQuota, nsAnnotation string, vmi *kubevirtv1.VirtualMachineInstance, arch, ratio string) corev1.ResourceList {
	hard := q.Status.Hard
	if len(hard) == 0 {
		hard = q.Spec.Hard
	}
	hard = hard.DeepCopy()
	if d := DefaultQuota(quotas); d == nil || d.Name != q.Name || q.Annotations[AnnotationSkipQuotaAutoScaling] == "true" || quotaEmpty(q) {
		return hard
	}
	project, ok := ParseRancherQuota(nsAnnotation)
	migrating, parsed := MigratingUsage(q)
	if !ok || !parsed {
		return hard
	}
	if !alreadyRecorded(q, vmi) {
		for n, v := range migrationRecord(q, vmi, arch, ratio) {
			s := migrating[n]
			s.Add(v)
			migrating[n] = s
		}
	}
	scaled := hard.DeepCopy()
	for name, limit := range map[corev1.ResourceName]string{corev1.ResourceLimitsCPU: project.Limit.LimitsCPU, corev1.ResourceLimitsMemory: project.Limit.LimitsMemory} {
		if limit == "" {
			continue
		}
		base, err := resource.ParseQuantity(limit)
		if err != nil {
			return hard // GetCPUMemoryLimitsFromRancherNamespaceResourceQuota fails: not scaled
		}
		if !base.IsZero() {
			base.Add(migrating[name])
			scaled[name] = base
		}
	}
	return scaled
}

// migrationRecord is what Harvester records on q for vmi's migration
// (CalculateScaleResourceQuotaWithVMI).
func migrationRecord(q *corev1.ResourceQuota, vmi *kubevirtv1.VirtualMachineInstance, arch, ratio string) corev1.ResourceList {
	limits := vmi.Spec.Domain.Resources.Limits
	out := corev1.ResourceList{}
	if limits.Cpu().IsZero() && limits.Memory().IsZero() {
		return out
	}
	if _, ok := q.Spec.Hard[corev1.ResourceLimitsCPU]; ok && !limits.Cpu().IsZero() {
		out[corev1.ResourceLimitsCPU] = limits.Cpu().DeepCopy()
	}
	if _, ok := q.Spec.Hard[corev1.ResourceLimitsMemory]; ok && !limits.Memory().IsZero() {
		mem := limits.Memory().DeepCopy()
		mem.Add(LauncherMemoryOverhead(&vmi.Spec, arch, ratio))
		out[corev1.ResourceLimitsMemory] = mem
	}
	return out
}

// alreadyRecorded: q holds vmi's migration already (ContainsMigratingVM),
// so it is among MigratingUsage and not added again.
func alreadyRecorded(q *corev1.ResourceQuota, vmi *kubevirtv1.VirtualMachineInstance) bool {
	_, byUID := q.Annotations[AnnotationMigratingUIDPrefix+string(vmi.UID)]
	_, byName := q.Annotations[AnnotationMigratingNamePrefix+vmi.Name]
	return byUID || byName
}

// quotaEmpty is Harvester's isEmpty: neither limits.cpu nor limits.memory
// is set to a non-zero value.
func quotaEmpty(q *corev1.ResourceQuota) bool {
	return q.Spec.Hard.Name(corev1.ResourceLimitsCPU, resource.DecimalSI).IsZero() &&
		q.Spec.Hard.Name(corev1.ResourceLimitsMemory, resource.BinarySI).IsZero()
}
