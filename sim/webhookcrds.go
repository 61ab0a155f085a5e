package sim

// webhookCRDs are the kinds harvester-webhook's caches watch
// (pkg/webhook/clients, Harvester v1.8.1) that the simulator serves for no
// other reason: its caches all start together and the configurations are
// registered only once every one of them has synced, so each must be
// served. They accept any field (Harvester's chart, harvester-network-
// controller, Longhorn, Cluster API, logging-operator and Rancher ship
// schemas; nothing here creates such objects but the tests' own).
var webhookCRDs = []crdSpec{
	harvesterKind("Addon", "addons", true),
	harvesterKind("ResourceQuota", "resourcequotas", true),
	harvesterKind("ScheduleVMBackup", "schedulevmbackups", false),
	harvesterKind("Upgrade", "upgrades", false),
	harvesterKind("UpgradeLog", "upgradelogs", false),
	harvesterKind("Version", "versions", false),
	harvesterKind("VirtualMachineBackup", "virtualmachinebackups", false),
	harvesterKind("VirtualMachineRestore", "virtualmachinerestores", false),
	harvesterKind("VirtualMachineTemplate", "virtualmachinetemplates", true),
	harvesterKind("VirtualMachineTemplateVersion", "virtualmachinetemplateversions", false),
	{group: "network.harvesterhci.io", version: "v1beta1", kind: "ClusterNetwork", plural: "clusternetworks", clusterScoped: true},
	{group: "network.harvesterhci.io", version: "v1beta1", kind: "VlanConfig", plural: "vlanconfigs", clusterScoped: true},
	{group: "network.harvesterhci.io", version: "v1beta1", kind: "VlanStatus", plural: "vlanstatuses", clusterScoped: true},
	snapshotKind("VolumeSnapshotClass", "volumesnapshotclasses", true, "814"),
	{group: "longhorn.io", version: "v1beta2", kind: "Engine", plural: "engines", status: true},
	{group: "longhorn.io", version: "v1beta2", kind: "Node", plural: "nodes", status: true},
	{group: "cluster.x-k8s.io", version: "v1beta1", kind: "Cluster", plural: "clusters", status: true},
	{group: "cluster.x-k8s.io", version: "v1beta1", kind: "Machine", plural: "machines", status: true},
	{group: "logging.banzaicloud.io", version: "v1beta1", kind: "Flow", plural: "flows", status: true},
	{group: "logging.banzaicloud.io", version: "v1beta1", kind: "ClusterFlow", plural: "clusterflows", status: true},
	{group: "logging.banzaicloud.io", version: "v1beta1", kind: "Output", plural: "outputs", status: true},
	{group: "logging.banzaicloud.io", version: "v1beta1", kind: "ClusterOutput", plural: "clusteroutputs", status: true},
	{group: "management.cattle.io", version: "v3", kind: "Feature", plural: "features", clusterScoped: true, status: true},
	{group: "management.cattle.io", version: "v3", kind: "ManagedChart", plural: "managedcharts", status: true},
	{group: "fleet.cattle.io", version: "v1alpha1", kind: "Cluster", plural: "clusters", status: true},
}

func harvesterKind(kind, plural string, status bool) crdSpec {
	return crdSpec{group: "harvesterhci.io", version: "v1beta1", kind: kind, plural: plural, status: status}
}
