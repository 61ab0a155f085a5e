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
