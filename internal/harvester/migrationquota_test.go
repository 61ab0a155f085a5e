package harvester

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestMigrationHard: the hard limits a migration's target pod meets, as
// Harvester v1.8's migration controller (scaleResourceQuotaWithVMI,
// CalculateScaleResourceQuotaWithVMI) and resourcequota controller
// (scaleResourceQuotaOnDemand, CalculateNewResourceQuotaFromBaseDelta)
// make them; expected values worked out from that source.
func TestMigrationHard(t *testing.T) {
	const project = `{"limit":{"limitsCpu":"4","limitsMemory":"8Gi"}}`
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", UID: "u1"}}
	vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	vmi.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
	quota := func(name string, def bool, hard string, ann map[string]string) corev1.ResourceQuota {
		q := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: ann, Labels: map[string]string{}}}
		q.Spec.Hard = corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse(hard)}
		q.Status.Hard = q.Spec.Hard.DeepCopy()
		if def {
			q.Labels[LabelDefaultResourceQuota] = "true"
		}
		return q
	}
	cases := []struct {
		name    string
		quotas  []corev1.ResourceQuota
		ns      string
		wantCPU string
	}{
		{name: "a quota Rancher does not manage keeps its hard limit", quotas: []corev1.ResourceQuota{quota("rq", false, "4", nil)}, ns: project, wantCPU: "4"},
		{name: "Rancher's default quota: the project's limit plus the VMI's CPU limit",
			quotas: []corev1.ResourceQuota{quota("default-x", true, "4", nil)}, ns: project, wantCPU: "6"},
		{name: "scaled from the project's limit, not from the quota's", quotas: []corev1.ResourceQuota{quota("default-x", true, "3", nil)}, ns: project, wantCPU: "6"},
		{name: "plus other VMs migrating meanwhile", ns: project, wantCPU: "7",
			quotas: []corev1.ResourceQuota{quota("default-x", true, "4", map[string]string{AnnotationMigratingUIDPrefix + "u2": `{"limits.cpu":"1"}`})}},
		{name: "this VM recorded already: counted once", ns: project, wantCPU: "6",
			quotas: []corev1.ResourceQuota{quota("default-x", true, "6", map[string]string{AnnotationMigratingUIDPrefix + "u1": `{"limits.cpu":"2"}`})}},
		{name: "skipResourceQuotaAutoScaling: not scaled", ns: project, wantCPU: "4",
			quotas: []corev1.ResourceQuota{quota("default-x", true, "4", map[string]string{AnnotationSkipQuotaAutoScaling: "true"})}},
		{name: "no project annotation on the namespace: not scaled", quotas: []corev1.ResourceQuota{quota("default-x", true, "4", nil)}, wantCPU: "4"},
		{name: "the project sets no CPU limit: not scaled", quotas: []corev1.ResourceQuota{quota("default-x", true, "4", nil)},
			ns: `{"limit":{"limitsMemory":"8Gi"}}`, wantCPU: "4"},
		{name: "a recorded migration that does not parse: not scaled", ns: project, wantCPU: "4",
			quotas: []corev1.ResourceQuota{quota("default-x", true, "4", map[string]string{AnnotationMigratingNamePrefix + "other": "{"})}},
		{name: "only the first default quota is scaled", ns: project, wantCPU: "4",
			quotas: []corev1.ResourceQuota{quota("default-y", true, "4", nil), quota("default-a", true, "4", nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hard := MigrationHard(&tc.quotas[0], tc.quotas, tc.ns, vmi, "amd64", "")
			if got := hard[corev1.ResourceLimitsCPU]; got.Cmp(resource.MustParse(tc.wantCPU)) != 0 {
				t.Errorf("limits.cpu %s, want %s", got.String(), tc.wantCPU)
			}
		})
	}
}

// TestMigrationHardMemory: the memory recorded is the VMI's limit plus
// KubeVirt's GetMemoryOverhead for the VMI, times Harvester's default
// ratio 1.5 (renderresources.go, multiplyMemory). For 2Gi requested, 2
// vCPUs (from the CPU limit) on amd64: page tables
// ceil(2147483648/1000)*1000/512 = 4194304 bytes (truncated), processes
// 220Mi, vCPUs 2x8Mi, an IO thread 8Mi, video 32Mi: 4194304 + 289406976
// = 293601280; with the ratio: ceil(293601280/1000) = 293602 kilo, half
// of it truncated 146801, so 293601280 + 146801000 = 440402280 bytes.
// The project's 8Gi plus 2Gi plus that.
func TestMigrationHardMemory(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", UID: "u1"}}
	vmi.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	vmi.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
	q := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", Labels: map[string]string{LabelDefaultResourceQuota: "true"}}}
	q.Spec.Hard = corev1.ResourceList{corev1.ResourceLimitsMemory: resource.MustParse("8Gi")}
	hard := MigrationHard(&q, []corev1.ResourceQuota{q}, `{"limit":{"limitsCpu":"4","limitsMemory":"8Gi"}}`, vmi, "amd64", "")
	want := int64(8<<30) + int64(2<<30) + 440402280
	if got := hard[corev1.ResourceLimitsMemory]; got.Value() != want {
		t.Errorf("limits.memory %d, want %d", got.Value(), want)
	}
	// The quota had no limits.cpu, so none is recorded for the VM; the
	// resourcequota controller still sets the project's (base plus
	// nothing).
	if got := hard[corev1.ResourceLimitsCPU]; got.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("limits.cpu %s, want the project's 4", got.String())
	}
}
