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

func fieldMatches(scope, want string) bool {
	return scope == lbapi.All || want == lbapi.All || scope == want
}

// Matches reports whether non-global pool p serves requirement r: the
// network is equal and some scope entry matches field by field.
func Matches(p *lbapi.IPPool, r Requirement) bool {
	if p.Spec.Selector.Network != r.Network {
		return false
	}
	for _, s := range p.Spec.Selector.Scope {
		if fieldMatches(s.Project, r.Project) && fieldMatches(s.Namespace, r.Namespace) && fieldMatches(s.GuestCluster, r.Cluster) {
			return true
		}
	}
	return false
}

// SelectPool picks the pool for r: the matching non-global pool of highest
// priority (ties: by name), else the global pool.
func SelectPool(pools []lbapi.IPPool, r Requirement) (*lbapi.IPPool, error) {
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
		if Matches(p, r) {
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
	switch {
	case len(candidates) > 0:
		return candidates[0], nil
	case global != nil:
		return global, nil
	}
	return nil, fmt.Errorf("no matched IPPool with requirement %s", r)
}
