package harvester

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
	// SettingUpgradeConfig holds the upgrade's options, restoreVM among
	// them (pkg/settings: UpgradeConfigSettingName, UpgradeConfig).
	SettingUpgradeConfig = "upgrade-config"
	// DefaultMemoryOverheadRatio is the setting's default.
	DefaultMemoryOverheadRatio = "1.5"
)

// Annotation-key prefixes on Rancher's default ResourceQuota under which
// Harvester records what a migrating VM holds twice (its JSON resource
// list); the quota check subtracts them from status.used.
const (
	AnnotationMigratingUIDPrefix  = "harvesterhci.io/migratingUID-"
	AnnotationMigratingNamePrefix = "harvesterhci.io/migrating-"
)

// What Harvester v1.8 does to a VM that its quotas do not let run
// (pkg/controller/master/virtualmachine: VMIController.StopVMIfExceededQuota
// when KubeVirt reports its launcher pod refused with "exceeded quota",
// VMController.SetHaltIfInsufficientResourceQuota when the VM does not fit
// a Rancher project's limits; both call stopVM): it sets the VM's
// runStrategy to Halted, records why in this annotation (the refusal's
// message) and posts an event of this reason on the VM. It never starts
// the VM again; the annotation goes once the VM runs again.
const (
	AnnotationInsufficientResourceQuota = "harvesterhci.io/insufficient-resource-quota"
	ReasonInsufficientResourceQuota     = "InsufficientResourceQuota"
)
