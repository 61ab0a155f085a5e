// Package apicalls lists every Harvester API request the cloud provider
// (CCM) and CSI driver releases pinned in guest/addons/versions.go make with
// the guest cluster's credential, as their sources at those releases make
// them (github.com/harvester/harvester-cloud-provider and
// github.com/harvester/harvester-csi-driver). The credential
// harvester-bootstrap and the node driver give guests must allow exactly
// these; the end-to-end test test/e2e/bootstrap checks it with access
// reviews. A version bump edits this list (and the releases below, which a
// unit test keeps equal to the pinned ones).
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

// Call is one kind of request: a verb on a resource (and subresource) of an
// API group, in the VM namespace unless ClusterScoped.
type Call struct {
	Component   string
	Verb        string
	Group       string
	Resource    string
	Subresource string
	// Name, when set, is the one object the call reads.
	Name          string
	ClusterScoped bool
	// GrantedInEveryNamespace marks a namespaced call that Harvester grants
	// in every namespace, because its rule sits in harvesterhci.io:csi-driver
	// which (as with Harvester's own kubeconfig API) is bound cluster-wide.
	GrantedInEveryNamespace bool
	// Why documents what the release does with it.
	Why string
}

const (
	kubevirt     = "kubevirt.io"
	subresources = "subresources.kubevirt.io"
	lb           = "loadbalancer.harvesterhci.io"
	storage      = "storage.k8s.io"
	harvester    = "harvesterhci.io"
)

// Calls lists the requests of both releases.
var Calls = []Call{
	{Component: CCM, Verb: "get", Group: kubevirt, Resource: "virtualmachines", Why: "providerID harvester://<VM UID> and node existence"},
	{Component: CCM, Verb: "get", Group: kubevirt, Resource: "virtualmachineinstances", Why: "node addresses and topology annotations"},
	{Component: CCM, Verb: "list", Group: kubevirt, Resource: "virtualmachineinstances", Why: "VMI informer"},
	{Component: CCM, Verb: "watch", Group: kubevirt, Resource: "virtualmachineinstances", Why: "VMI informer"},
	{Component: CCM, Verb: "get", Group: subresources, Resource: "virtualmachineinstances", Subresource: "guestosinfo", Why: "node OS details from qemu-guest-agent"},
	{Component: CCM, Verb: "get", Group: lb, Resource: "loadbalancers", Why: "a Service's Harvester load balancer"},
	{Component: CCM, Verb: "create", Group: lb, Resource: "loadbalancers", Why: "new LoadBalancer Service"},
	{Component: CCM, Verb: "update", Group: lb, Resource: "loadbalancers", Why: "changed Service, status.address"},
	{Component: CCM, Verb: "delete", Group: lb, Resource: "loadbalancers", Why: "deleted Service"},

	{Component: CSI, Verb: "get", Group: harvester, Resource: "settings", Name: "server-version", ClusterScoped: true, Why: "chooses hot-plug by subresource (< 1.8) or by patch (>= 1.8)"},
	{Component: CSI, Verb: "create", Resource: "persistentvolumeclaims", Why: "CreateVolume: one Harvester PVC per CSI volume"},
	{Component: CSI, Verb: "delete", Resource: "persistentvolumeclaims", Why: "DeleteVolume"},
	{Component: CSI, Verb: "get", Resource: "persistentvolumeclaims", Why: "volume state and size"},
	{Component: CSI, Verb: "get", Group: storage, Resource: "storageclasses", ClusterScoped: true, Why: "host storage class of a volume"},
	{Component: CSI, Verb: "get", Group: kubevirt, Resource: "virtualmachines", Why: "the node's VM on attach/detach"},
	{Component: CSI, Verb: "get", Group: kubevirt, Resource: "virtualmachineinstances", Why: "hot-plugged volume status"},
	{Component: CSI, Verb: "list", Group: storage, Resource: "volumeattachments", ClusterScoped: true, Why: "attachment state on Harvester"},
	{Component: CSI, Verb: "update", Group: subresources, Resource: "virtualmachines", Subresource: "addvolume", Why: "attach before Harvester 1.8"},
	{Component: CSI, Verb: "update", Group: subresources, Resource: "virtualmachines", Subresource: "removevolume", Why: "detach before Harvester 1.8"},
	{Component: CSI, Verb: "patch", Group: kubevirt, Resource: "virtualmachines", GrantedInEveryNamespace: true, Why: "attach/detach by JSON patch from Harvester 1.8"},
}
