package loadbalancer

import (
	"fmt"
	"sort"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// Requirement is what a LoadBalancer asks of an IP pool: its annotations
// network, project, namespace (default: its own namespace) and cluster.
type Requirement struct {
	Network, Project, Namespace, Cluster string
}

func (r Requirement) String() string {
	return fmt.Sprintf("{Network:%s Project:%s Namespace:%s Cluster:%s}", r.Network, r.Project, r.Namespace, r.Cluster)
}

// RequirementOf reads the requirement from the LoadBalancer's annotations.
func RequirementOf(l *lbapi.LoadBalancer) Requirement {
	a := l.Annotations
	r := Requirement{Network: a[lbapi.AnnNetwork], Project: a[lbapi.AnnProject], Namespace: a[lbapi.AnnNamespace], Cluster: a[lbapi.AnnCluster]}
	if r.Namespace == "" {
		r.Namespace = l.Namespace
	}
	return r
}

// IsGlobal reports whether p is the global pool: labelled so, or its only
// scope is */*/*.
func IsGlobal(p *lbapi.IPPool) bool {
	if p.Labels[lbapi.LabelGlobalPool] == "true" {
		return true
	}
	s := p.Spec.Selector.Scope
	return len(s) == 1 && s[0].Project == lbapi.All && s[0].Namespace == lbapi.All && s[0].GuestCluster == lbapi.All
}

// fieldMatches: either side is "*" or both are equal; in loose mode an
// empty field of the pool matches too.
func fieldMatches(scope, want string, loose bool) bool {
	return scope == lbapi.All || want == lbapi.All || scope == want || (loose && scope == "")
}

// matches reports whether non-global pool p serves requirement r: the
// network is equal and some scope entry matches field by field (Harvester's
// load balancer v1.8.0, pkg/ipam/selector.go, isMatch); in loose mode the
// pool's project and guest cluster match when empty.
func matches(p *lbapi.IPPool, r Requirement, loose bool) bool {
	if p.Spec.Selector.Network != r.Network {
		return false
	}
	for _, s := range p.Spec.Selector.Scope {
		if fieldMatches(s.Project, r.Project, loose) && fieldMatches(s.Namespace, r.Namespace, false) && fieldMatches(s.GuestCluster, r.Cluster, loose) {
			return true
		}
	}
	return false
}

// SelectPool picks the pool of a cluster LoadBalancer (the cloud
// provider's) for r as Harvester's selectIPPool does
// (pkg/controller/loadbalancer/controller.go): the matching non-global
// pool of highest priority (ties: by name; Harvester takes the last its
// cache lists), else the global pool; with neither, the same in loose
// mode. The error is Harvester's message, which prints its
// *ipam.Requirement with %+v.
func SelectPool(pools []lbapi.IPPool, r Requirement) (*lbapi.IPPool, error) {
	for _, loose := range []bool{false, true} {
		if p := selectPool(pools, r, loose); p != nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no matched IPPool with requirement &%s", r)
}

// selectPool is ipam.Selector.Select in one mode, or nil.
func selectPool(pools []lbapi.IPPool, r Requirement, loose bool) *lbapi.IPPool {
	var candidates []*lbapi.IPPool
	var global *lbapi.IPPool
	for i := range pools {
		p := &pools[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if IsGlobal(p) {
			if global == nil || p.Name < global.Name {
				global = p
			}
			continue
		}
		if matches(p, r, loose) {
			candidates = append(candidates, p)
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.Spec.Selector.Priority != b.Spec.Selector.Priority {
			return a.Spec.Selector.Priority > b.Spec.Selector.Priority
		}
		return a.Name < b.Name
	})
	if len(candidates) > 0 {
		return candidates[0]
	}
	return global
}
