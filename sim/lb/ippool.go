// Stand-in for Harvester's load balancer controller, load-balancer-harvester
// v1.8.1: the IP pool a LoadBalancer gets. It follows
// https://github.com/harvester/load-balancer-harvester/blob/v1.8.1/pkg/ipam/selector.go.

package lb

import (
	"fmt"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// Requirement is ipam.Requirement (pkg/ipam/selector.go).
type Requirement struct {
	Network   string
	Project   string
	Namespace string
	Cluster   string
}

// SelectPool is the LoadBalancer controller's selectIPPool
// (pkg/controller/loadbalancer/controller.go): the requirement is the
// LoadBalancer's network, project, namespace (its own when not annotated)
// and cluster annotations; ipam.Selector.Select in strict mode, then, for
// a cluster LoadBalancer, in loose mode; no pool is an error worded as
// Harvester words it. pools are taken in the order given (Harvester's
// cache lists them in no set order).
func SelectPool(pools []lbapi.IPPool, l *lbapi.LoadBalancer) (*lbapi.IPPool, error) {
	a := l.Annotations
	r := &Requirement{Network: a[lbapi.AnnNetwork], Project: a[lbapi.AnnProject], Namespace: a[lbapi.AnnNamespace], Cluster: a[lbapi.AnnCluster]}
	if r.Namespace == "" {
		r.Namespace = l.Namespace
	}
	if p := selectPool(pools, r, false); p != nil {
		return p, nil
	}
	if l.Spec.WorkloadType == lbapi.WorkloadCluster {
		if p := selectPool(pools, r, true); p != nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no matched IPPool with requirement %+v", r)
}

// selectPool is ipam.Selector.Select: the last matching pool of the
// highest priority (a pool of priority at least the best so far
// replaces it), else the last pool labelled global.
func selectPool(pools []lbapi.IPPool, r *Requirement, loose bool) *lbapi.IPPool {
	var selected, global *lbapi.IPPool
	var priority uint32
	for i := range pools {
		p := &pools[i]
		if p.Labels[lbapi.LabelGlobalPool] == "true" {
			global = p
			continue
		}
		if matches(p.Spec.Selector, r, loose) && p.Spec.Selector.Priority >= priority {
			selected, priority = p, p.Spec.Selector.Priority
		}
	}
	if selected != nil {
		return selected
	}
	return global
}

// matches is ipam.Matcher.Matches with isMatch: the network is equal and
// some scope entry matches, each field when either side is "*" or both
// are equal; in loose mode an empty project or guest cluster of the pool
// matches too.
func matches(sel lbapi.Selector, r *Requirement, loose bool) bool {
	if sel.Network != r.Network {
		return false
	}
	field := func(pool, want string, emptyMatches bool) bool {
		return pool == lbapi.All || want == lbapi.All || pool == want || (emptyMatches && pool == "")
	}
	for _, s := range sel.Scope {
		if field(s.Project, r.Project, loose) && field(s.Namespace, r.Namespace, false) && field(s.GuestCluster, r.Cluster, loose) {
			return true
		}
	}
	return false
}

// IsGlobalPool is the IPPool mutating webhook's isGlobalIPPool
// (pkg/webhook/ippool/mutator.go), by which it labels a pool global: its
// only scope is */*/*.
func IsGlobalPool(p *lbapi.IPPool) bool {
	s := p.Spec.Selector.Scope
	return len(s) == 1 && s[0].Namespace == lbapi.All && s[0].Project == lbapi.All && s[0].GuestCluster == lbapi.All
}
