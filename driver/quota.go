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
	cpu      resource.Quantity // limits.cpu
	memory   resource.Quantity // limits.memory: the VM's memory and Harvester's overhead
	overhead resource.Quantity
	storage  resource.Quantity            // requests.storage of every volume
	byClass  map[string]resource.Quantity // requests.storage per storage class
	perClass map[string]int64             // volumes per storage class
	pvcs     int64
}

// askOf is a plan's ask, with the memory overhead Harvester computes
// (ratio: the additional-guest-memory-overhead-ratio setting).
func askOf(p VMPlan, ratio string) vmAsk {
	a := vmAsk{
		cpu:      *resource.NewQuantity(int64(p.CPU), resource.DecimalSI),
		overhead: harvester.VMMemoryOverhead(corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(p.CPU), resource.DecimalSI)}, "", ratio),
		byClass:  map[string]resource.Quantity{},
		perClass: map[string]int64{},
		pvcs:     int64(len(p.Disks)),
	}
	a.memory = *resource.NewQuantity(int64(p.MemoryGiB)<<30, resource.BinarySI)
	a.memory.Add(a.overhead)
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
	return a
}

const classQuotaInfix = ".storageclass.storage.k8s.io/"

// needs is the amount of a quota's resource the machine consumes, and
// whether it consumes it at all: the virt-launcher pod's limits, the
// volumes, and one each of the pod, VM, VMI and cloud-init Secret.
func (a vmAsk) needs(name corev1.ResourceName) (resource.Quantity, bool) {
	count := func(n int64) (resource.Quantity, bool) { return *resource.NewQuantity(n, resource.DecimalSI), true }
	switch name {
	case corev1.ResourceLimitsCPU:
		return a.cpu, true
	case corev1.ResourceLimitsMemory:
		return a.memory, true
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
				out = append(out, fmt.Sprintf("ResourceQuota %s/%s: %s: %s%s", q.Namespace, q.Name, name, msg, ask.overheadNote(name)))
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
	return fmt.Sprintf("the machine needs %s, %s of %s is free (%s used)", need.String(), free.String(), hard.String(), used.String())
}

func (a vmAsk) overheadNote(name corev1.ResourceName) string {
	if name != corev1.ResourceLimitsMemory && name != "limitsMemory" {
		return ""
	}
	return fmt.Sprintf(" (the VM's memory and Harvester's VM overhead %s)", a.overhead.String())
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
		{"limitsCpu", limits.Limit.LimitsCPU, corev1.ResourceLimitsCPU, ask.cpu},
		{"limitsMemory", limits.Limit.LimitsMemory, corev1.ResourceLimitsMemory, ask.memory},
		{"requestsStorage", limits.Limit.RequestsStorage, corev1.ResourceRequestsStorage, ask.storage},
	} {
		hard, err := resource.ParseQuantity(c.limit)
		if c.limit == "" || err != nil || hard.IsZero() {
			continue
		}
		used := rq.Status.Used[c.used].DeepCopy()
		used.Sub(migrating[c.used])
		if msg := shortfall(c.need, hard, used); msg != "" {
			out = append(out, fmt.Sprintf("namespace %s's project quota (%s %s): %s: %s%s", ns.Name, harvester.AnnotationRancherResourceQuota, c.field, c.used, msg, ask.overheadNote(c.used)))
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
