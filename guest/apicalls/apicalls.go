// Package apicalls lists every Harvester API request the cloud provider
// (CCM) and CSI driver releases pinned in guest/addons/versions.go make with
// the guest cluster's credential, as their sources at those releases make
// them (github.com/harvester/harvester-cloud-provider and
// github.com/harvester/harvester-csi-driver), start-up lists and error paths
// included. The credential harvester-bootstrap and the node driver give
// guests must allow exactly these: guest/credentials derives the rights it
// grants outside the VM namespace from this list, and the end-to-end test
// test/e2e/bootstrap walks every call with access reviews. A version bump
// edits this list (and the releases below, which a unit test keeps equal to
// the pinned ones).
package apicalls

// The releases this list describes.
const (
	CloudProviderRelease = "v0.2.7"
	CSIDriverRelease     = "v0.2.9"
)

// Components.
const (
	CCM = "cloud provider"
	CSI = "CSI driver"
)

// Namespaces the CSI driver reads outside the VM namespace (its constants
// HarvesterNS and LonghornNS).
const (
	HarvesterNamespace = "harvester-system"
	LonghornNamespace  = "longhorn-system"
)

// Call is one kind of request: a verb on a resource (and subresource) of an
// API group, in the VM namespace unless ClusterScoped or Namespace says
// otherwise.
type Call struct {
	Component   string
	Verb        string
	Group       string
	Resource    string
	Subresource string
	// Name, when set, is the one object the call reads.
	Name          string
	ClusterScoped bool
	// Namespace is a fixed namespace the call goes to ("" = the VM namespace,
	// the credential's own).
	Namespace string
	// Why documents what the release does with it.
	Why string
}

// InVMNamespace reports whether the call goes to the VM namespace.
func (c Call) InVMNamespace() bool { return !c.ClusterScoped && c.Namespace == "" }

const (
	kubevirt     = "kubevirt.io"
	subresources = "subresources.kubevirt.io"
	lb           = "loadbalancer.harvesterhci.io"
	storage      = "storage.k8s.io"
	harvester    = "harvesterhci.io"
	longhorn     = "longhorn.io"
	snapshot     = "snapshot.storage.k8s.io"
)

// Calls lists the requests of both releases.
var Calls = append(ccmCalls, csiCalls...)

var ccmCalls = []Call{
	{Component: CCM, Verb: "get", Group: kubevirt, Resource: "virtualmachines", Why: "providerID harvester://<VM UID> and node existence"},
	{Component: CCM, Verb: "get", Group: kubevirt, Resource: "virtualmachineinstances", Why: "node addresses and topology annotations"},
	{Component: CCM, Verb: "list", Group: kubevirt, Resource: "virtualmachineinstances", Why: "VMI informer (namespaced factory)"},
	{Component: CCM, Verb: "watch", Group: kubevirt, Resource: "virtualmachineinstances", Why: "VMI informer (namespaced factory)"},
	{Component: CCM, Verb: "get", Group: subresources, Resource: "virtualmachineinstances", Subresource: "guestosinfo", Why: "node OS details from qemu-guest-agent"},
	{Component: CCM, Verb: "get", Group: lb, Resource: "loadbalancers", Why: "a Service's Harvester load balancer"},
	{Component: CCM, Verb: "create", Group: lb, Resource: "loadbalancers", Why: "new LoadBalancer Service"},
	{Component: CCM, Verb: "update", Group: lb, Resource: "loadbalancers", Why: "changed Service, status.address"},
	{Component: CCM, Verb: "delete", Group: lb, Resource: "loadbalancers", Why: "deleted Service"},
}

var csiCalls = []Call{
	// Start-up (pkg/csi/manager.go, NewControllerServer).
	{Component: CSI, Verb: "get", Group: harvester, Resource: "settings", Name: "server-version", ClusterScoped: true, Why: "start-up: hot-plug by subresource (< 1.8) or by patch (>= 1.8); exits when denied"},
	{Component: CSI, Verb: "get", Group: kubevirt, Resource: "virtualmachineinstances", Why: "start-up: the node's VMI by hostname; attach/detach state"},
	{Component: CSI, Verb: "list", Group: kubevirt, Resource: "virtualmachineinstances", Why: "start-up: the node's VMI by MAC address"},
	{Component: CSI, Verb: "list", Group: harvester, Resource: "networkfilesystems", Namespace: HarvesterNamespace, Why: "start-up: RWX volumes only when this list succeeds"},
	{Component: CSI, Verb: "list", Group: longhorn, Resource: "volumes", Namespace: LonghornNamespace, Why: "start-up: Longhorn volume status checks"},
	// Volumes (CreateVolume, DeleteVolume, expansion).
	{Component: CSI, Verb: "create", Resource: "persistentvolumeclaims", Why: "CreateVolume: one Harvester PVC per CSI volume"},
	{Component: CSI, Verb: "get", Resource: "persistentvolumeclaims", Why: "volume state and size"},
	{Component: CSI, Verb: "update", Resource: "persistentvolumeclaims", Why: "ControllerExpandVolume"},
	{Component: CSI, Verb: "delete", Resource: "persistentvolumeclaims", Why: "DeleteVolume"},
	{Component: CSI, Verb: "list", Resource: "pods", Why: "expansion: is the volume in use"},
	{Component: CSI, Verb: "get", Group: storage, Resource: "storageclasses", ClusterScoped: true, Why: "host storage class of a volume"},
	{Component: CSI, Verb: "get", Group: harvester, Resource: "settings", Name: "csi-driver-config", ClusterScoped: true, Why: "snapshot classes per provisioner"},
	{Component: CSI, Verb: "get", Group: harvester, Resource: "settings", Name: "csi-online-expand-validation", ClusterScoped: true, Why: "online expansion allowed"},
	{Component: CSI, Verb: "get", Group: harvester, Resource: "volumeremoterestores", Why: "DeleteVolume: first call (404 lets the delete go on)"},
	{Component: CSI, Verb: "create", Group: harvester, Resource: "volumeremoterestores", Why: "volume from a remote backup"},
	{Component: CSI, Verb: "delete", Group: harvester, Resource: "volumeremoterestores", Why: "DeleteVolume of a restored volume"},
	{Component: CSI, Verb: "get", Group: harvester, Resource: "volumeremotebackups", Why: "remote backup state"},
	{Component: CSI, Verb: "list", Group: harvester, Resource: "volumeremotebackups", Why: "ListSnapshots of remote backups"},
	{Component: CSI, Verb: "create", Group: harvester, Resource: "volumeremotebackups", Why: "CreateSnapshot (remote backup)"},
	{Component: CSI, Verb: "delete", Group: harvester, Resource: "volumeremotebackups", Why: "DeleteSnapshot (remote backup)"},
	{Component: CSI, Verb: "get", Group: snapshot, Resource: "volumesnapshots", Why: "snapshot state"},
	{Component: CSI, Verb: "list", Group: snapshot, Resource: "volumesnapshots", Why: "ListSnapshots"},
	{Component: CSI, Verb: "create", Group: snapshot, Resource: "volumesnapshots", Why: "CreateSnapshot"},
	{Component: CSI, Verb: "delete", Group: snapshot, Resource: "volumesnapshots", Why: "DeleteSnapshot"},
	// Shared (RWX) volumes: Harvester's NetworkFilesystems.
	{Component: CSI, Verb: "get", Group: harvester, Resource: "networkfilesystems", Namespace: HarvesterNamespace, Why: "RWX volume endpoint"},
	{Component: CSI, Verb: "create", Group: harvester, Resource: "networkfilesystems", Namespace: HarvesterNamespace, Why: "CreateVolume of an RWX volume"},
	{Component: CSI, Verb: "update", Group: harvester, Resource: "networkfilesystems", Namespace: HarvesterNamespace, Why: "enable or disable an RWX endpoint on publish"},
	{Component: CSI, Verb: "delete", Group: harvester, Resource: "networkfilesystems", Namespace: HarvesterNamespace, Why: "DeleteVolume of an RWX volume"},
	// Attach and detach (ControllerPublishVolume, the node controller).
	{Component: CSI, Verb: "get", Group: kubevirt, Resource: "virtualmachines", Why: "the node's VM on attach/detach"},
	{Component: CSI, Verb: "list", Group: storage, Resource: "volumeattachments", ClusterScoped: true, Why: "attachment state on Harvester"},
	{Component: CSI, Verb: "patch", Group: kubevirt, Resource: "virtualmachines", Why: "attach/detach by JSON patch from Harvester 1.8"},
	{Component: CSI, Verb: "update", Group: subresources, Resource: "virtualmachines", Subresource: "addvolume", Why: "attach before Harvester 1.8"},
	{Component: CSI, Verb: "update", Group: subresources, Resource: "virtualmachines", Subresource: "removevolume", Why: "detach before Harvester 1.8; node controller"},
	{Component: CSI, Verb: "update", Group: subresources, Resource: "virtualmachineinstances", Subresource: "removevolume", Why: "detach a volume only in the VMI"},
}
