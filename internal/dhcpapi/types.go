// Package dhcpapi is Harvester's managed DHCP (the vm-dhcp-controller
// add-on) as the driver and the simulator see it: the kinds IPPool and
// VirtualMachineNetworkConfig of network.harvesterhci.io/v1alpha1, the
// labels its IPPool controller puts on a network, and the VM annotation
// that asks for a given address. Types only, no API calls.
package dhcpapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and version of the add-on's kinds.
const (
	Group   = "network.harvesterhci.io"
	Version = "v1alpha1"
)

// Resources.
var (
	GVRIPPool        = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "ippools"}
	GVRNetworkConfig = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "virtualmachinenetworkconfigs"}
)

// Labels the IPPool controller puts on the NetworkAttachmentDefinition it
// serves: a network with both is served by managed DHCP.
const (
	LabelIPPoolNamespace = Group + "/ippool-namespace"
	LabelIPPoolName      = Group + "/ippool-name"
	// LabelVMName is on each VirtualMachineNetworkConfig: its VM's name.
	LabelVMName = "harvesterhci.io/vmName"
	// AnnotationStaticIPPrefix + <nic name> on a VM asks for that NIC's
	// address (vm-dhcp-controller v1.9 line on, PR 157).
	AnnotationStaticIPPrefix = "static-ip.harvesterhci.io/"
	// AnnotationMACAddress is the VM annotation (JSON map NIC -> MAC)
	// Harvester >= 1.6 writes from the VMI.
	AnnotationMACAddress = "harvesterhci.io/mac-address"
)

// Values of IPPool status.ipv4.allocated besides MACs.
const (
	Excluded = "EXCLUDED"
	Reserved = "RESERVED"
)

// Condition types and network config states.
const (
	CondRegistered = "Registered"
	CondCacheReady = "CacheReady"
	CondAgentReady = "AgentReady"
	CondStopped    = "Stopped"
	CondAllocated  = "Allocated"
	CondDisabled   = "Disabled"
	CondInSynced   = "InSynced"

	StateAllocated = "Allocated"
	StatePending   = "Pending"
	StateStale     = "Stale"
)

// IPPool is one managed-DHCP pool of a network.
type IPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IPPoolSpec   `json:"spec"`
	Status            IPPoolStatus `json:"status,omitempty"`
}

// IPPoolSpec is an IPPool's spec.
type IPPoolSpec struct {
	NetworkName string     `json:"networkName"`
	Paused      *bool      `json:"paused,omitempty"`
	IPv4Config  IPv4Config `json:"ipv4Config,omitempty"`
}

// IPv4Config is the pool's subnet and range.
type IPv4Config struct {
	ServerIP     string   `json:"serverIP,omitempty"`
	CIDR         string   `json:"cidr,omitempty"`
	Pool         Pool     `json:"pool,omitempty"`
	Router       string   `json:"router,omitempty"`
	DNS          []string `json:"dns,omitempty"`
	DomainName   *string  `json:"domainName,omitempty"`
	DomainSearch []string `json:"domainSearch,omitempty"`
	NTP          []string `json:"ntp,omitempty"`
	LeaseTime    *int     `json:"leaseTime,omitempty"`
}

// Pool is the range addresses are handed out from.
type Pool struct {
	Start   string   `json:"start,omitempty"`
	End     string   `json:"end,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// IPPoolStatus is an IPPool's status.
type IPPoolStatus struct {
	IPv4       *IPv4Status `json:"ipv4,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
}

// IPv4Status maps addresses to the MAC holding them (or EXCLUDED/RESERVED).
type IPv4Status struct {
	Allocated map[string]string `json:"allocated,omitempty"`
	Used      int               `json:"used"`
	Available int               `json:"available"`
}

// Condition is a condition of the add-on's kinds.
type Condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	LastUpdateTime     metav1.Time `json:"lastUpdateTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// VirtualMachineNetworkConfig is the managed-DHCP configuration of one VM,
// named after it.
type VirtualMachineNetworkConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              NetworkConfigSpec   `json:"spec"`
	Status            NetworkConfigStatus `json:"status,omitempty"`
}

// NetworkConfigSpec is a vmnetcfg's spec.
type NetworkConfigSpec struct {
	VMName         string          `json:"vmName"`
	NetworkConfigs []NetworkConfig `json:"networkConfigs"`
	Paused         *bool           `json:"paused,omitempty"`
}

// NetworkConfig is one NIC of the VM: its network, MAC and, optionally,
// the address asked for.
type NetworkConfig struct {
	NetworkName string  `json:"networkName"`
	MACAddress  string  `json:"macAddress"`
	IPAddress   *string `json:"ipAddress,omitempty"`
}

// NetworkConfigStatus is a vmnetcfg's status.
type NetworkConfigStatus struct {
	NetworkConfigs []NetworkConfigState `json:"networkConfigs,omitempty"`
	Conditions     []Condition          `json:"conditions,omitempty"`
}

// NetworkConfigState is what was allocated for one NIC.
type NetworkConfigState struct {
	AllocatedIPAddress string `json:"allocatedIPAddress,omitempty"`
	MACAddress         string `json:"macAddress"`
	NetworkName        string `json:"networkName"`
	State              string `json:"state,omitempty"`
}

// PoolOf names the IPPool serving a network, from the network's labels
// ("" when managed DHCP does not serve it).
func PoolOf(networkLabels map[string]string) (namespace, name string) {
	ns, n := networkLabels[LabelIPPoolNamespace], networkLabels[LabelIPPoolName]
	if ns == "" || n == "" {
		return "", ""
	}
	return ns, n
}
