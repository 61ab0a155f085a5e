package maintenance

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
)

// TestMigrationTargetQuota: a 2-CPU VM whose launcher pod (compute 2,
// KubeVirt's guest-console-log sidecar 15m; an init container of 10m runs
// before them and adds nothing) is charged limits.cpu 2015m (Kubernetes'
// PodLimits),
// in a namespace whose quota has 3030m of 4040m in use. Kubernetes' quota
// admission (checkQuotas) refuses the migration target pod with its
// message; Harvester v1.8 makes room only in Rancher's default quota of a
// namespace with a project limit: the project's 4040m plus the VMI's CPU
// limit 2 is 6040m, enough for 3030m + 2015m.
func TestMigrationTargetQuota(t *testing.T) {
	scene := func(rancher bool, upgrade bool) Result {
		cpu2 := func(v *kubevirtv1.VirtualMachineInstance) {
			v.Namespace = "q1"
			v.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}
		}
		h := snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", cpu2), guestVMI("g-p-1", "h2", "g", "p"))
		lim := func(cpu string) corev1.ResourceRequirements {
			return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
		}
		always := corev1.ContainerRestartPolicyAlways
		h.Pods = append(h.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "q1", Name: "virt-launcher-g-p-0-abcde",
			Labels: map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "uid-g-p-0"}},
			Spec: corev1.PodSpec{NodeName: "h1", Containers: []corev1.Container{{Name: "compute", Resources: lim("2")}},
				// KubeVirt v1.7 renders the sidecar as a restartable init
				// container (serialconsolelog.go), plus a short init container.
				InitContainers: []corev1.Container{{Name: "container-disk-binary", Resources: lim("10m")},
					{Name: "guest-console-log", Resources: lim("15m"), RestartPolicy: &always}}}})
		q := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "q1", Name: "rq", Labels: map[string]string{}}}
		q.Spec.Hard = corev1.ResourceList{"limits.cpu": resource.MustParse("4040m")}
		q.Status.Hard, q.Status.Used = q.Spec.Hard.DeepCopy(), corev1.ResourceList{"limits.cpu": resource.MustParse("3030m")}
		h.Quotas, h.ProjectQuotas = []corev1.ResourceQuota{q}, map[string]string{"q1": ""}
		if rancher {
			h.Quotas[0].Labels["resourcequota.management.cattle.io/default-resource-quota"] = "true"
			h.ProjectQuotas["q1"] = `{"limit":{"limitsCpu":"4040m"}}`
		}
		r, err := Check(h, []string{"h1"}, Options{Upgrade: upgrade})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const refused = "exceeded quota: rq, requested: limits.cpu=2015m, used: limits.cpu=3030m, limited: limits.cpu=4040m"
	for _, upgrade := range []bool{false, true} {
		r := scene(false, upgrade)
		if v := verdict(t, r, "g-p-0"); v.Action != Blocks || !strings.Contains(v.Why, refused) || !r.Failed() {
			t.Errorf("upgrade %v, plain quota: %s: %s, want blocks with %q", upgrade, v.Action, v.Why, refused)
		}
		r = scene(true, upgrade)
		if v := verdict(t, r, "g-p-0"); v.Action != Migrates {
			t.Errorf("upgrade %v, Rancher's quota: %s: %s, want migrates", upgrade, v.Action, v.Why)
		}
	}
	// Quotas not listed: nothing to judge against.
	h := snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p"), guestVMI("g-p-1", "h2", "g", "p"))
	h.Errors[clusterstate.KindResourceQuota] = "forbidden"
	if r, _ := Check(h, []string{"h1"}, Options{}); verdict(t, r, "g-p-0").Action != Migrates {
		t.Errorf("quotas unknown: %+v", r.VMs)
	}
}
