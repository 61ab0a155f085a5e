package doctor

import (
	"fmt"
	"slices"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/loadbalancer"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// Check names of the load-balancer checks.
const (
	CheckLoadBalancers = "loadbalancers"
	CheckIPPools       = "ip-pools"
)

// DefaultCCMCluster is the cluster name the cloud provider uses without
// --cluster-name.
const DefaultCCMCluster = "kubernetes"

// clusterLBs are the LoadBalancers the cloud provider created for the cluster.
func clusterLBs(h *clusterstate.Harvester) []lbapi.LoadBalancer {
	var out []lbapi.LoadBalancer
	for _, l := range h.LoadBalancers {
		if l.Labels[harvester.LabelLBCluster] == h.Cluster {
			out = append(out, l)
		}
	}
	return out
}

// Address is the LoadBalancer's address, or "".
func Address(l *lbapi.LoadBalancer) string {
	if l.Status.Address != "" {
		return l.Status.Address
	}
	return l.Status.AllocatedAddress.IP
}

// NoAddressReason is the Ready condition's message of a LoadBalancer
// without an address.
func NoAddressReason(l *lbapi.LoadBalancer) string {
	for _, c := range l.Status.Conditions {
		if c.Type == lbapi.ConditionReady && c.Message != "" {
			return c.Message
		}
	}
	return "no Ready condition yet (is Harvester's load-balancer controller running?)"
}

// LoadBalancers: each of the cluster's LoadBalancers has an address, or
// the reason it has none.
func LoadBalancers(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckLoadBalancers, clusterstate.KindLoadBalancer); bad {
		return row
	}
	var seen, bad []string
	for _, l := range clusterLBs(h) {
		if a := Address(&l); a != "" {
			seen = append(seen, l.Name+" "+a)
		} else {
			bad = append(bad, l.Name+": "+NoAddressReason(&l))
		}
	}
	if len(bad) > 0 {
		return fail(CheckLoadBalancers, "no address: "+names(bad),
			"see the "+CheckIPPools+" row: add or widen an IPPool whose scope matches the namespace and guest cluster, or free addresses")
	}
	var defaults []string
	for _, l := range h.LoadBalancers {
		if l.Labels[harvester.LabelLBCluster] == DefaultCCMCluster {
			defaults = append(defaults, l.Name)
		}
	}
	if len(defaults) > 0 {
		return warn(CheckLoadBalancers, fmt.Sprintf("%d of this cluster; %s labelled %s=%s (a cloud provider without --cluster-name)",
			len(seen), names(defaults), harvester.LabelLBCluster, DefaultCCMCluster),
			"give the guest's cloud provider --cluster-name="+h.Cluster+" (`harvester-bootstrap addon ... --cluster-name`)")
	}
	if len(seen) == 0 {
		return ok(CheckLoadBalancers, "none labelled "+harvester.LabelLBCluster+"="+h.Cluster)
	}
	return ok(CheckLoadBalancers, names(seen))
}

// requirements are what the cluster's LoadBalancers ask of a pool: what a
// Service without annotations asks, and each LoadBalancer's own.
func requirements(h *clusterstate.Harvester) []loadbalancer.Requirement {
	reqs := []loadbalancer.Requirement{{Namespace: h.Namespace, Cluster: h.Cluster}}
	for _, l := range clusterLBs(h) {
		if r := loadbalancer.RequirementOf(&l); !slices.Contains(reqs, r) {
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// IPPools: the pools Harvester picks for the cluster's LoadBalancers (the
// same rule as Harvester's), each with free addresses left.
func IPPools(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckIPPools, clusterstate.KindIPPool); bad {
		return row
	}
	var seen, bad []string
	for _, r := range requirements(h) {
		p, err := loadbalancer.SelectPool(h.IPPools, r)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		desc := fmt.Sprintf("%s %d of %d free", p.Name, p.Status.Available, p.Status.Total)
		if loadbalancer.IsGlobal(p) {
			desc += " (global pool)"
		}
		if p.Status.Available <= 0 {
			bad = append(bad, desc+" for "+r.String())
		} else if !slices.Contains(seen, desc) {
			seen = append(seen, desc)
		}
	}
	if len(bad) > 0 {
		r := fail
		if len(clusterLBs(h)) == 0 {
			r = warn // no LoadBalancer needs one yet
		}
		return r(CheckIPPools, names(bad),
			"create an IPPool with scope namespace "+h.Namespace+", guest cluster "+h.Cluster+" (`harvester-bootstrap lb pool`), or widen the exhausted one")
	}
	return ok(CheckIPPools, names(seen))
}
