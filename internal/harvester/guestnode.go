package harvester

// How the cloud provider marks a guest node it has initialised.
const (
	// ProviderIDPrefix starts every guest node's providerID
	// (harvester://<VM UID>).
	ProviderIDPrefix = "harvester://"
	// TaintUninitialized is the taint kubelet with --cloud-provider=external
	// registers a node with; the cloud provider removes it.
	TaintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"
	// CCMClusterNameFlag is the cloud provider's flag naming the guest
	// cluster (its LoadBalancers' cluster label); without it the cluster is
	// "kubernetes".
	CCMClusterNameFlag = "--cluster-name"
	// AnnProvidedNodeIP is the annotation kubelet with --node-ip puts on its
	// Node; only then does the cloud provider set the node's addresses.
	AnnProvidedNodeIP = "alpha.kubernetes.io/provided-node-ip"
)

// Role labels of a guest node: RKE2 and K3s set control-plane and etcd
// ("true"), RKE1 controlplane and etcd.
const (
	LabelRoleControlPlane     = "node-role.kubernetes.io/control-plane"
	LabelRoleControlPlaneRKE1 = "node-role.kubernetes.io/controlplane"
	LabelRoleEtcd             = "node-role.kubernetes.io/etcd"
)

// LabelWitnessHost marks a Harvester witness host (etcd only; it runs no
// VM and Harvester's upgrade does not count it as a host for VMs).
const LabelWitnessHost = "node-role.harvesterhci.io/witness"
