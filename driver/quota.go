package driver

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// vmAsk is what a machine asks of its namespace's resource quotas.
type vmAsk struct {
	// requests and limits of the virt-launcher pod: the VM as Harvester's
	// mutator leaves it, plus KubeVirt's overhead.
	requests, limits corev1.ResourceList
	launcherOverhead resource.Quantity
	// Harvester's project-quota rule: the VM's limits, the memory with the
	// overhead of a VMI that has only those limits.
	ruleCPU, ruleMemory, ruleOverhead resource.Quantity
	storage                           resource.Quantity            // requests.storage of every volume
	byClass                           map[string]resource.Quantity // requests.storage per storage class
	perClass                          map[string]int64             // volumes per storage class
	pvcs                              int64
}

// quotaEnv is what the quota rules read from Harvester besides the plan.
type quotaEnv struct {
	ratio      string               // additional-guest-memory-overhead-ratio ("": the default)
	overcommit harvester.Overcommit // overcommit-config
	arch       string               // the hosts' architecture
}

// askOf is a plan's ask: its VM is built, mutated as Harvester v1.8's
// webhook will, and rendered as KubeVirt renders the launcher pod.
func askOf(p VMPlan, env quotaEnv) (vmAsk, error) {
	vm, err := BuildVM(p)
	if err != nil {
		return vmAsk{}, err
	}
	limits := vm.Spec.Template.Spec.Domain.Resources.Limits
	a := vmAsk{
		ruleCPU:      limits.Cpu().DeepCopy(),
		ruleMemory:   limits.Memory().DeepCopy(),
		ruleOverhead: harvester.VMMemoryOverhead(limits, env.arch, env.ratio),
		byClass:      map[string]resource.Quantity{},
		perClass:     map[string]int64{},
		pvcs:         int64(len(p.Disks)),
	}
	a.ruleMemory.Add(a.ruleOverhead)
	oc := env.overcommit
	settings := harvester.MutatorSettings{Overcommit: &oc, OverheadRatio: env.ratio, ARM: env.arch == harvester.ArchARM64}
	if err := harvester.MutateVMResources(vm, settings); err != nil {
		return vmAsk{}, fmt.Errorf("the VM mutator of Harvester would refuse the machine: %w", err)
	}
	spec := &vm.Spec.Template.Spec
	a.requests, a.limits = harvester.LauncherResources(spec, env.arch, env.ratio)
	a.launcherOverhead = harvester.LauncherMemoryOverhead(spec, env.arch, env.ratio)
	a.storage = *resource.NewQuantity(0, resource.BinarySI)
	for _, d := range p.Disks {
		q := *resource.NewQuantity(int64(d.SizeGiB)<<30, resource.BinarySI)
		a.storage.Add(q)
		c, ok := a.byClass[d.StorageClassName]
		if !ok {
			c = *resource.NewQuantity(0, resource.BinarySI)
		}
		c.Add(q)
		a.byClass[d.StorageClassName] = c
		a.perClass[d.StorageClassName]++
	}
	return a, nil
}

const classQuotaInfix = ".storageclass.storage.k8s.io/"

// needs is the amount of a quota's resource the machine consumes, and
// whether it consumes it at all: the virt-launcher pod's requests and
// limits, the volumes, and one each of the pod, VM, VMI and cloud-init Secret.
func (a vmAsk) needs(name corev1.ResourceName) (resource.Quantity, bool) {
	count := func(n int64) (resource.Quantity, bool) { return *resource.NewQuantity(n, resource.DecimalSI), true }
	switch name {
	case corev1.ResourceLimitsCPU:
		return a.limits[corev1.ResourceCPU], true
	case corev1.ResourceLimitsMemory:
		return a.limits[corev1.ResourceMemory], true
	case corev1.ResourceRequestsCPU, corev1.ResourceCPU:
		return a.requests[corev1.ResourceCPU], true
	case corev1.ResourceRequestsMemory, corev1.ResourceMemory:
		return a.requests[corev1.ResourceMemory], true
	case corev1.ResourceRequestsStorage:
		return a.storage, true
	case corev1.ResourcePersistentVolumeClaims, "count/persistentvolumeclaims":
		return count(a.pvcs)
	case corev1.ResourcePods, corev1.ResourceSecrets, "count/pods", "count/secrets",
		"count/virtualmachines.kubevirt.io", "count/virtualmachineinstances.kubevirt.io":
		return count(1)
	}
	class, res, ok := strings.Cut(string(name), classQuotaInfix)
	if !ok || a.perClass[class] == 0 {
		return resource.Quantity{}, false
	}
	switch corev1.ResourceName(res) {
	case corev1.ResourceRequestsStorage:
		return a.byClass[class], true
	case corev1.ResourcePersistentVolumeClaims:
		return count(a.perClass[class])
	}
	return resource.Quantity{}, false
}

// quotaShortfalls lists, for every ResourceQuota of the namespace, each
// resource the machine would take beyond what is free (hard - used), as
// the API server's quota admission would refuse it; and Harvester's own
// rule (a Rancher project's limits on the namespace against its default
// quota's usage, pkg/util/resourcequota). Empty: it fits.
func quotaShortfalls(ask vmAsk, ns *corev1.Namespace, quotas []corev1.ResourceQuota) []string {
	var out []string
	for _, q := range quotas {
		names := make([]string, 0, len(q.Spec.Hard))
		for n := range q.Spec.Hard {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			name := corev1.ResourceName(n)
			need, ok := ask.needs(name)
			if !ok {
				continue
			}
			hard, used := q.Spec.Hard[name], q.Status.Used[name]
			if msg := shortfall(need, hard, used); msg != "" {
				out = append(out, fmt.Sprintf("ResourceQuota %s/%s: %s: %s%s", q.Namespace, q.Name, name, msg, overheadNote(name, ask.launcherOverhead, "KubeVirt's")))
			}
		}
	}
	return append(out, harvesterRuleShortfalls(ask, ns, quotas)...)
}

// shortfall says why need does not fit into hard - used ("" when it does).
func shortfall(need, hard, used resource.Quantity) string {
	free := hard.DeepCopy()
	free.Sub(used)
	if need.Cmp(free) <= 0 {
		return ""
	}
	if free.Sign() < 0 {
		free = resource.Quantity{}
	}
	return fmt.Sprintf("the machine needs %s, %s of %s is free (%s used)", mebibytes(need), mebibytes(free), hard.String(), used.String())
}

// overheadNote explains a memory figure: the VM's memory and whose
// overhead.
func overheadNote(name corev1.ResourceName, overhead resource.Quantity, whose string) string {
	switch name {
	case corev1.ResourceLimitsMemory, corev1.ResourceRequestsMemory, corev1.ResourceMemory:
		return fmt.Sprintf(" (the VM's memory and %s VM overhead %s)", whose, mebibytes(overhead))
	}
	return ""
}

// mebibytes shows a byte quantity that is not a whole MiB with its size
// in MiB beside it (other quantities as they are).
func mebibytes(q resource.Quantity) string {
	if q.Format != resource.BinarySI || q.Value()%(1<<20) == 0 {
		return q.String()
	}
	return fmt.Sprintf("%s (%.1fMi)", q.String(), float64(q.Value())/(1<<20))
}

// rancherQuota is the namespace annotation field.cattle.io/resourceQuota.
type rancherQuota struct {
	Limit struct {
		LimitsCPU       string `json:"limitsCpu"`
		LimitsMemory    string `json:"limitsMemory"`
		RequestsStorage string `json:"requestsStorage"`
	} `json:"limit"`
}

// harvesterRuleShortfalls is Harvester v1.8's check of a VM against a
// Rancher project's namespace limits: the namespace annotation's limits
// minus the usage of Rancher's default ResourceQuota (less what migrating
// VMs hold twice) must cover the VM's CPU, memory with overhead and
// volumes.
func harvesterRuleShortfalls(ask vmAsk, ns *corev1.Namespace, quotas []corev1.ResourceQuota) []string {
	if ns == nil || ns.Annotations[harvester.AnnotationRancherResourceQuota] == "" {
		return nil
	}
	var rq *corev1.ResourceQuota
	for i := range quotas {
		if quotas[i].Labels[harvester.LabelDefaultResourceQuota] == "true" {
			rq = &quotas[i]
			break
		}
	}
	var limits rancherQuota
	if rq == nil || json.Unmarshal([]byte(ns.Annotations[harvester.AnnotationRancherResourceQuota]), &limits) != nil {
		return nil
	}
	migrating := migratingUsage(rq)
	var out []string
	for _, c := range []struct {
		field string
		limit string
		used  corev1.ResourceName
		need  resource.Quantity
	}{
		{"limitsCpu", limits.Limit.LimitsCPU, corev1.ResourceLimitsCPU, ask.ruleCPU},
		{"limitsMemory", limits.Limit.LimitsMemory, corev1.ResourceLimitsMemory, ask.ruleMemory},
		{"requestsStorage", limits.Limit.RequestsStorage, corev1.ResourceRequestsStorage, ask.storage},
	} {
		hard, err := resource.ParseQuantity(c.limit)
		if c.limit == "" || err != nil || hard.IsZero() {
			continue
		}
		used := rq.Status.Used[c.used].DeepCopy()
		used.Sub(migrating[c.used])
		if msg := shortfall(c.need, hard, used); msg != "" {
			out = append(out, fmt.Sprintf("namespace %s's project quota (%s %s): %s: %s%s", ns.Name, harvester.AnnotationRancherResourceQuota, c.field, c.used, msg, overheadNote(c.used, ask.ruleOverhead, "Harvester's")))
		}
	}
	return out
}

// migratingUsage sums the resource lists Harvester records on the quota
// for migrating VMs.
func migratingUsage(rq *corev1.ResourceQuota) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for k, v := range rq.Annotations {
		if !strings.HasPrefix(k, harvester.AnnotationMigratingUIDPrefix) && !strings.HasPrefix(k, harvester.AnnotationMigratingNamePrefix) {
			continue
		}
		var rl corev1.ResourceList
		if json.Unmarshal([]byte(v), &rl) != nil {
			continue
		}
		for n, q := range rl {
			s := sum[n]
			s.Add(q)
			sum[n] = s
		}
	}
	return sum
}
