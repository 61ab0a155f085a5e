package sim

// apiServerCRDs are the kinds Harvester's API server's caches watch
// (pkg/config, pkg/controller/master, Harvester v1.8.1) that neither the
// simulator nor pkg/data/crd.go (which the API server installs itself)
// serves: Harvester's chart's VirtualMachineImageDownloader, the CSI
// snapshotter's VolumeSnapshot and VolumeSnapshotContent and Whereabouts'
// IPPool (deploy/charts/harvester-crd), Longhorn's Replica, Rancher's
// catalog App and ClusterRepo, helm-controller's HelmChart and
// HelmChartConfig, CDI's CDI and StorageProfile. Its controllers start
// only once every cache has synced. They accept any field; nothing here
// creates such objects.
var apiServerCRDs = []crdSpec{
	harvesterKind("VirtualMachineImageDownloader", "virtualmachineimagedownloaders", true),
	snapshotKind("VolumeSnapshot", "volumesnapshots", false, "814"),
	snapshotKind("VolumeSnapshotContent", "volumesnapshotcontents", true, "955"),
	{group: "whereabouts.cni.cncf.io", version: "v1alpha1", kind: "IPPool", plural: "ippools"},
	{group: "longhorn.io", version: "v1beta2", kind: "Replica", plural: "replicas", status: true},
	{group: "catalog.cattle.io", version: "v1", kind: "App", plural: "apps", status: true},
	{group: "catalog.cattle.io", version: "v1", kind: "ClusterRepo", plural: "clusterrepos", clusterScoped: true, status: true},
	{group: "helm.cattle.io", version: "v1", kind: "HelmChart", plural: "helmcharts", status: true},
	{group: "helm.cattle.io", version: "v1", kind: "HelmChartConfig", plural: "helmchartconfigs"},
	{group: "cdi.kubevirt.io", version: "v1beta1", kind: "CDI", plural: "cdis", clusterScoped: true, status: true},
	{group: "cdi.kubevirt.io", version: "v1beta1", kind: "StorageProfile", plural: "storageprofiles", clusterScoped: true, status: true},

	// Kinds of other projects that pkg/data/crd.go creates, if missing,
	// with schemas wrangler generates from their Go types, one after the
	// other: the largest took kube-apiserver 5-20 s each when eight
	// simulators started together, most of the API server's start. Nothing
	// the project or the simulator does creates or reads them, so they are
	// served here, schema-less, before it starts, and it leaves existing
	// CRDs alone (BatchCreateCRDsIfNotExisted). docs/sim.md lists it among
	// the known differences.
	{group: "logging.banzaicloud.io", version: "v1beta1", kind: "Logging", plural: "loggings", clusterScoped: true},
	{group: "monitoring.coreos.com", version: "v1", kind: "Prometheus", plural: "prometheuses"},
	{group: "monitoring.coreos.com", version: "v1", kind: "Alertmanager", plural: "alertmanagers"},
	{group: "rke.cattle.io", version: "v1", kind: "RKEControlPlane", plural: "rkecontrolplanes"},
	{group: "provisioning.cattle.io", version: "v1", kind: "Cluster", plural: "clusters"},
	{group: "upgrade.cattle.io", version: "v1", kind: "Plan", plural: "plans", clusterScoped: true},
}

// snapshotKind is a kind of the CSI snapshotter's group: a *.k8s.io group,
// so kube-apiserver wants the approval annotation the chart's CRD carries
// (external-snapshotter's pull request pr).
func snapshotKind(kind, plural string, clusterScoped bool, pr string) crdSpec {
	return crdSpec{group: "snapshot.storage.k8s.io", version: "v1", kind: kind, plural: plural, clusterScoped: clusterScoped,
		status:      kind != "VolumeSnapshotClass",
		annotations: map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/" + pr}}
}
