package gc

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/loadbalancer"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// ErrGuestUnlisted is why SelectLive refuses: without the guest's Services
// no LoadBalancer can be judged left behind.
var ErrGuestUnlisted = errors.New("the guest cluster's Services could not be listed, so no LoadBalancer can be judged left behind")

// SelectLive lists the cloud provider's LoadBalancers of h's cluster (its
// cloudprovider.harvesterhci.io/cluster, serviceNamespace and serviceName
// labels) that a live guest cluster g no longer needs: their Service is
// gone, no longer of type LoadBalancer, or a re-created one with another
// UID than the LoadBalancer's name was derived from. LoadBalancers of other
// clusters, without those labels or already being deleted are never
// candidates. It refuses when the guest's Services or the LoadBalancers
// could not be listed.
func SelectLive(h *clusterstate.Harvester, g *clusterstate.Guest) ([]Candidate, error) {
	if e := g.Errors[clusterstate.KindService]; e != "" {
		return nil, fmt.Errorf("find leftover LoadBalancers: %w: %s", ErrGuestUnlisted, e)
	}
	if e := h.Failed(clusterstate.KindLoadBalancer); e != "" {
		return nil, fmt.Errorf("find leftover LoadBalancers: %s", e)
	}
	var out []Candidate
	for _, l := range h.LoadBalancers {
		if why := LeftBehind(h.Cluster, &l, g); why != "" {
			out = append(out, candidate(clusterstate.KindLoadBalancer, l.ObjectMeta, why))
		}
	}
	return out, nil
}

// LeftBehind says why the LoadBalancer l of cluster is no longer needed by
// the guest g, or "" when it is (or is not the cloud provider's for
// cluster).
func LeftBehind(cluster string, l *lbapi.LoadBalancer, g *clusterstate.Guest) string {
	ns, name := l.Labels[harvester.LabelLBServiceNamespace], l.Labels[harvester.LabelLBServiceName]
	if l.DeletionTimestamp != nil || l.Labels[harvester.LabelLBCluster] != cluster || ns == "" || name == "" {
		return ""
	}
	ref := ns + "/" + name
	svc := g.Service(ns, name)
	switch {
	case (svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer) && sharedBy(g, ref) != "":
		return "" // another Service still uses its address
	case svc == nil:
		return "Service " + ref + " no longer exists in the guest cluster"
	case svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
		return "Service " + ref + " is of type " + string(svc.Spec.Type) + ", no longer LoadBalancer"
	case lbapi.CloudProviderName(cluster, ns, name, string(svc.UID)) != l.Name:
		return "Service " + ref + " was re-created (UID " + string(svc.UID) + "); this LoadBalancer belongs to an earlier one"
	}
	return ""
}

// sharedBy is a Service of type LoadBalancer that shares ref's
// LoadBalancer (annotation cloudprovider.harvesterhci.io/primary-service),
// or "".
func sharedBy(g *clusterstate.Guest, ref string) string {
	for _, s := range g.LoadBalancerServices() {
		if s.Annotations[loadbalancer.AnnPrimaryService] == ref {
			return s.Namespace + "/" + s.Name
		}
	}
	return ""
}

// Merge appends to a the candidates of b that a does not hold.
func Merge(a, b []Candidate) []Candidate {
	seen := map[string]bool{}
	for _, c := range a {
		seen[c.Kind+" "+c.Ref()] = true
	}
	for _, c := range b {
		if !seen[c.Kind+" "+c.Ref()] {
			a = append(a, c)
		}
	}
	return a
}
