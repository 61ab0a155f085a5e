// Package lb is the pure part of the simulated Harvester load balancer
// controller: IP pool address allocation and backend selection. The
// LoadBalancer and IPPool types and the pool-matching rule are shared with
// harvester-bootstrap (internal/lbapi); the names below keep the
// simulator's code reading as before. The controller that does the API
// calls lives in test/sim/controllers.
package lb

import "github.com/harvester-kit/harvester-machine/internal/lbapi"

// Harvester's load balancer API (internal/lbapi).
const (
	Group           = lbapi.Group
	Version         = lbapi.Version
	Finalizer       = lbapi.Finalizer
	LabelGlobalPool = lbapi.LabelGlobalPool
	AnnNetwork      = lbapi.AnnNetwork
	AnnProject      = lbapi.AnnProject
	AnnNamespace    = lbapi.AnnNamespace
	AnnCluster      = lbapi.AnnCluster
	IPAMPool        = lbapi.IPAMPool
	IPAMDHCP        = lbapi.IPAMDHCP
	WorkloadVM      = lbapi.WorkloadVM
	WorkloadCluster = lbapi.WorkloadCluster
	ConditionReady  = lbapi.ConditionReady
	DHCPAddress     = lbapi.DHCPAddress
	All             = lbapi.All
)

// Types of loadbalancer.harvesterhci.io/v1beta1 (internal/lbapi).
type (
	LoadBalancer       = lbapi.LoadBalancer
	LoadBalancerSpec   = lbapi.LoadBalancerSpec
	Listener           = lbapi.Listener
	HealthCheck        = lbapi.HealthCheck
	LoadBalancerStatus = lbapi.LoadBalancerStatus
	AllocatedAddress   = lbapi.AllocatedAddress
	Condition          = lbapi.Condition
	IPPool             = lbapi.IPPool
	IPPoolSpec         = lbapi.IPPoolSpec
	Range              = lbapi.Range
	Selector           = lbapi.Selector
	Scope              = lbapi.Scope
	IPPoolStatus       = lbapi.IPPoolStatus
	Requirement        = lbapi.Requirement
)

// Pool matching (internal/lbapi).
var (
	RequirementOf = lbapi.RequirementOf
	IsGlobal      = lbapi.IsGlobal
	Matches       = lbapi.Matches
	SelectPool    = lbapi.SelectPool
)
