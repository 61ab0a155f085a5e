package harvester

import (
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Resource quotas as Harvester v1.8 applies them to VMs
// (pkg/util/resourcequota): a namespace of a Rancher project carries the
// project's limits in an annotation, and Rancher's default ResourceQuota
// of the namespace carries what is used.
const (
	// AnnotationRancherResourceQuota on a namespace holds the JSON
	// {"limit":{"limitsCpu","limitsMemory","requestsStorage"}}.
	AnnotationRancherResourceQuota = "field.cattle.io/resourceQuota"
	// LabelDefaultResourceQuota "true" marks Rancher's ResourceQuota of the
	// namespace, whose status.used Harvester reads.
	LabelDefaultResourceQuota = "resourcequota.management.cattle.io/default-resource-quota"
	// SettingMemoryOverheadRatio multiplies KubeVirt's VM memory overhead.
	SettingMemoryOverheadRatio = "additional-guest-memory-overhead-ratio"
	// DefaultMemoryOverheadRatio is the setting's default.
	DefaultMemoryOverheadRatio = "1.5"
)

// VMMemoryOverhead is the memory overhead Harvester adds to a VM's memory
// limit when it checks a resource quota: KubeVirt's estimate for a VMI
// that has only the VM's limits (no memory request, no CPU topology, so
// no page-table part and the vCPUs taken from the CPU limit), on amd64:
// its processes (virt-launcher-monitor 25Mi, virt-launcher 100Mi, virtlogd
// 25Mi, virtqemud 40Mi, qemu 30Mi), 8Mi per vCPU, 8Mi for the IO thread,
// 32Mi of video RAM, all multiplied by the additional-guest-memory-
// overhead-ratio setting (ratio; "" or invalid: the default 1.5; below 1
// or 0: no multiplication, as KubeVirt ignores a ratio it cannot read).
func VMMemoryOverhead(vcpus int64, ratio string) resource.Quantity {
	if vcpus < 1 {
		vcpus = 1
	}
	const mi = 1 << 20
	overhead := (25+100+25+40+30)*mi + 8*mi*vcpus + 8*mi + 32*mi
	r, err := strconv.ParseFloat(ratio, 64)
	if ratio == "" || err != nil || r < 1 || r > 10 {
		r, _ = strconv.ParseFloat(DefaultMemoryOverheadRatio, 64)
	}
	// KubeVirt multiplies in kilo-scaled units and truncates the addition.
	kilo := overhead / 1000
	if overhead%1000 != 0 {
		kilo++ // ScaledValue rounds up
	}
	addition := int64(float64(kilo) * (r - 1.0))
	return *resource.NewQuantity(overhead+addition*1000, resource.BinarySI)
}

// Annotation-key prefixes on Rancher's default ResourceQuota under which
// Harvester records what a migrating VM holds twice (its JSON resource
// list); the quota check subtracts them from status.used.
const (
	AnnotationMigratingUIDPrefix  = "harvesterhci.io/migratingUID-"
	AnnotationMigratingNamePrefix = "harvesterhci.io/migrating-"
)
