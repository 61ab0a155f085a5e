// Package lbapi is Harvester's load balancer API as the simulator,
// harvester-bootstrap doctor and gc see it: the LoadBalancer and IPPool
// types of loadbalancer.harvesterhci.io/v1beta1, their labels and
// annotations: plumbing, no rule (the simulator plays the pool choice in
// sim/lb, doctor judges it in bootstrap/loadbalancer).
package lbapi

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, version, finalizer, labels, annotations and values of Harvester's
// load balancer API.
const (
	Group     = "loadbalancer.harvesterhci.io"
	Version   = "v1beta1"
	Finalizer = "wrangler.cattle.io/harvester-lb-controller"

	LabelGlobalPool = Group + "/global-ip-pool"

	AnnNetwork   = Group + "/network"
	AnnProject   = Group + "/project"
	AnnNamespace = Group + "/namespace"
	AnnCluster   = Group + "/cluster"

	IPAMPool = "pool"
	IPAMDHCP = "dhcp"

	WorkloadVM      = "vm"
	WorkloadCluster = "cluster"

	ConditionReady = "Ready"
	// DHCPAddress is what a LoadBalancer with ipam dhcp gets: kube-vip in
	// the guest runs the DHCP client.
	DHCPAddress = "0.0.0.0"
	// All matches anything in a pool's selector scope.
	All = "*"
)

// LoadBalancer is loadbalancer.harvesterhci.io/v1beta1 LoadBalancer.
type LoadBalancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              LoadBalancerSpec   `json:"spec,omitempty"`
	Status            LoadBalancerStatus `json:"status,omitempty"`
}

// LoadBalancerSpec is the LoadBalancer's desired state.
type LoadBalancerSpec struct {
	Description           string              `json:"description,omitempty"`
	WorkloadType          string              `json:"workloadType,omitempty"`
	IPAM                  string              `json:"ipam,omitempty"`
	IPPool                string              `json:"ipPool,omitempty"`
	Listeners             []Listener          `json:"listeners,omitempty"`
	BackendServerSelector map[string][]string `json:"backendServerSelector,omitempty"`
	HealthCheck           *HealthCheck        `json:"healthCheck,omitempty"`
}

// Listener is one port the load balancer serves.
type Listener struct {
	Name        string `json:"name,omitempty"`
	Port        int32  `json:"port"`
	Protocol    string `json:"protocol,omitempty"`
	BackendPort int32  `json:"backendPort"`
}

// HealthCheck configures the backend probes.
type HealthCheck struct {
	Port             uint `json:"port,omitempty"`
	SuccessThreshold uint `json:"successThreshold,omitempty"`
	FailureThreshold uint `json:"failureThreshold,omitempty"`
	PeriodSeconds    uint `json:"periodSeconds,omitempty"`
	TimeoutSeconds   uint `json:"timeoutSeconds,omitempty"`
}

// LoadBalancerStatus is written with the object (no status subresource).
type LoadBalancerStatus struct {
	Address          string           `json:"address,omitempty"`
	AllocatedAddress AllocatedAddress `json:"allocatedAddress,omitempty"`
	BackendServers   []string         `json:"backendServers,omitempty"`
	Conditions       []Condition      `json:"conditions,omitempty"`
}

// AllocatedAddress is the address the IPAM gave the load balancer.
type AllocatedAddress struct {
	IPPool  string `json:"ipPool,omitempty"`
	IP      string `json:"ip,omitempty"`
	Mask    string `json:"mask,omitempty"`
	Gateway string `json:"gateway,omitempty"`
}

// Condition is wrangler's generic condition.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastUpdateTime     string `json:"lastUpdateTime,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

// IPPool is loadbalancer.harvesterhci.io/v1beta1 IPPool (cluster scoped).
type IPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IPPoolSpec   `json:"spec,omitempty"`
	Status            IPPoolStatus `json:"status,omitempty"`
}

// IPPoolSpec lists the pool's ranges and who may use it.
type IPPoolSpec struct {
	Description string   `json:"description,omitempty"`
	Ranges      []Range  `json:"ranges"`
	Selector    Selector `json:"selector,omitempty"`
}

// Range is one subnet, optionally narrowed to RangeStart-RangeEnd.
type Range struct {
	Subnet     string `json:"subnet"`
	RangeStart string `json:"rangeStart,omitempty"`
	RangeEnd   string `json:"rangeEnd,omitempty"`
	Gateway    string `json:"gateway,omitempty"`
}

// Selector says which load balancers the pool serves.
type Selector struct {
	Priority uint32  `json:"priority,omitempty"`
	Network  string  `json:"network,omitempty"`
	Scope    []Scope `json:"scope,omitempty"`
}

// Scope is one (project, namespace, guest cluster) the pool serves; "*"
// matches anything.
type Scope struct {
	Project      string `json:"project,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	GuestCluster string `json:"guestCluster,omitempty"`
}

// IPPoolStatus counts and records the pool's addresses.
type IPPoolStatus struct {
	Total            int64             `json:"total"`
	Available        int64             `json:"available"`
	LastAllocated    string            `json:"lastAllocated,omitempty"`
	Allocated        map[string]string `json:"allocated,omitempty"`
	AllocatedHistory map[string]string `json:"allocatedHistory,omitempty"`
	Conditions       []Condition       `json:"conditions,omitempty"`
}

// Clone returns a deep copy.
func (s LoadBalancerStatus) Clone() LoadBalancerStatus {
	s.BackendServers = slices.Clone(s.BackendServers)
	s.Conditions = slices.Clone(s.Conditions)
	return s
}

// Clone returns a deep copy.
func (s IPPoolStatus) Clone() IPPoolStatus {
	s.Allocated = maps.Clone(s.Allocated)
	s.AllocatedHistory = maps.Clone(s.AllocatedHistory)
	s.Conditions = slices.Clone(s.Conditions)
	return s
}
