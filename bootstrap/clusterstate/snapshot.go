// Package clusterstate is what Harvester (and optionally the guest cluster)
// holds for one guest cluster, as `harvester-bootstrap doctor` and `gc`
// see it: a Snapshot of the objects, each kind listed once (fetch.go), and
// the outcome of authenticating the credentials involved. It never keeps a
// token: only who the token authenticated as and when it expires.
package clusterstate

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// Target names the guest cluster.
type Target struct {
	Cluster   string // guest cluster name (--cluster-name)
	Namespace string // Harvester namespace of its VMs (--namespace)
}

// Kinds, as snapshots and reports name them.
const (
	KindVM                 = "VirtualMachine"
	KindVMI                = "VirtualMachineInstance"
	KindPVC                = "PersistentVolumeClaim"
	KindSecret             = "Secret"
	KindServiceAccount     = "ServiceAccount"
	KindRoleBinding        = "RoleBinding"
	KindClusterRoleBinding = "ClusterRoleBinding"
	KindLoadBalancer       = "LoadBalancer"
	KindIPPool             = "IPPool"
	KindNode               = "Node"
	KindService            = "Service"
	KindWorkload           = "Deployment/DaemonSet"
	KindPod                = "Pod"
	KindStorageClass       = "StorageClass"
	KindVolumeAttachment   = "VolumeAttachment"
	KindAddressClaim       = "ConfigMap (address claim)"
)

// Harvester is the Harvester side of one guest cluster.
type Harvester struct {
	Target
	// VMs and VMIs of the namespace (the cluster's are picked by label).
	VMs  []kubevirtv1.VirtualMachine
	VMIs []kubevirtv1.VirtualMachineInstance
	// PVCs and cloud-init Secrets labelled with the guest cluster's name.
	PVCs      []corev1.PersistentVolumeClaim
	CloudInit []corev1.Secret
	// Claims are every PVC of the namespace (PVCs among them): the CSI
	// driver's host volumes carry no label of the cluster.
	Claims []corev1.PersistentVolumeClaim
	// StorageClasses of Harvester.
	StorageClasses []storagev1.StorageClass
	// AddressClaims are the driver's static-address claims (ConfigMaps)
	// labelled with the guest cluster's name.
	AddressClaims []corev1.ConfigMap
	// The credential objects harvester-bootstrap (or the driver's
	// --harvester-cloud-provider) created for the cluster.
	ServiceAccounts     []corev1.ServiceAccount
	RoleBindings        []rbacv1.RoleBinding
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	TokenSecrets        []TokenSecret
	// GrantBindings are the ClusterRoleBindings of the VM namespace's grant
	// (guest/credentials: the guests' reads outside their namespace).
	GrantBindings []rbacv1.ClusterRoleBinding
	// GrantRoleBindings are the grant's RoleBindings in the namespaces
	// guests call into (credentials.SharedNamespaces), those that exist.
	GrantRoleBindings []rbacv1.RoleBinding
	// GuestServiceAccounts names every guest credential's ServiceAccount
	// of the VM namespace, of any cluster (credentials.IsGuestServiceAccount):
	// the grant's rightful subjects.
	GuestServiceAccounts []string
	// Every LoadBalancer of the namespace and every IPPool.
	LoadBalancers []lbapi.LoadBalancer
	IPPools       []lbapi.IPPool
	// Errors of listing a kind (by Kind*); a kind missing here was listed.
	Errors map[string]string
}

// TokenSecret is a service-account token Secret without its data: whether
// it was filled and what authenticating with its token gave.
type TokenSecret struct {
	Namespace, Name, UID string
	ServiceAccount       string // the kubernetes.io/service-account.name annotation
	Labels               map[string]string
	Filled               bool
	Deleting             bool
	Auth                 *Auth // nil when not filled
}

// Auth is the outcome of authenticating one credential.
type Auth struct {
	Source string // where the credential came from, e.g. "--kubeconfig"
	User   string // the username the API server saw; empty when rejected
	// Err is why it did not authenticate (401 explained); empty when it did.
	Err string
	// Rejected is set when the API server answered 401.
	Rejected bool
	// Kind of credential: "token", "JWT", "client certificate", "none".
	Kind string
	// Expires is the JWT's exp or the client certificate's NotAfter.
	Expires *time.Time
}

// Guest is the guest cluster's side.
type Guest struct {
	Nodes    []corev1.Node
	Services []corev1.Service // every Service of every namespace
	// EndpointSlices of every namespace (the endpoints of a Service).
	EndpointSlices []discoveryv1.EndpointSlice
	Deployments    []appsv1.Deployment
	DaemonSets     []appsv1.DaemonSet // both in kube-system
	// SystemPods are kube-system's pods: a daemon pod's status carries
	// kube-vip's own errors (CrashLoopBackOff, the last termination's
	// message).
	SystemPods []corev1.Pod
	// ClusterRoles and ClusterRoleBindings of the guest (kube-vip's rights).
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	// PVCs of every namespace, the StorageClasses and VolumeAttachments.
	PVCs              []corev1.PersistentVolumeClaim
	StorageClasses    []storagev1.StorageClass
	VolumeAttachments []storagev1.VolumeAttachment
	Errors            map[string]string
}

// Snapshot is everything the checks look at.
type Snapshot struct {
	Now       time.Time
	Harvester Harvester
	// Admin is --kubeconfig's own authentication.
	Admin Auth
	// CloudConfig is the --cloud-config kubeconfig's, when given.
	CloudConfig *Auth
	// Driver is the node driver's credential, when given.
	Driver *DriverCredential
	// DriverGate is what the driver credentials serving the VM namespace
	// can take there (nil when Harvester could not be listed).
	DriverGate *DriverGate
	// Guest is nil without --guest-kubeconfig.
	Guest *Guest
	// HostStorageClass is the CSI add-on's host StorageClass as the user
	// gave it (--host-storage-class); "" when not given.
	HostStorageClass string
	// GuestKubeconfig is the --guest-kubeconfig path as given ("" without
	// it), for the commands the rows print.
	GuestKubeconfig string
}
