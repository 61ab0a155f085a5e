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
// gone, no longer of type LoadBalancer, or a re-created one whose UID is
// provably not the one the LoadBalancer's name was derived from. It also
// returns the LoadBalancers it keeps in doubt, with why. LoadBalancers of
// other clusters, without those labels or already being deleted are never
// candidates. It refuses when the guest's Services or the LoadBalancers
// could not be listed, or the guest is not shown to be the cluster.
func SelectLive(h *clusterstate.Harvester, g *clusterstate.Guest) (candidates, kept []Candidate, err error) {
	if e := g.Errors[clusterstate.KindService]; e != "" {
		return nil, nil, fmt.Errorf("find leftover LoadBalancers: %w: %s", ErrGuestUnlisted, e)
	}
	if e := h.Failed(clusterstate.KindLoadBalancer); e != "" {
		return nil, nil, fmt.Errorf("find leftover LoadBalancers: %s", e)
	}
	if err := clusterstate.VerifyGuest(h.Identity(), g); err != nil {
		return nil, nil, fmt.Errorf("find leftover LoadBalancers: %w", err)
	}
	for _, l := range h.LoadBalancers {
		why, keep := LeftBehind(h.Cluster, &l, g)
		switch {
		case why != "":
			candidates = append(candidates, candidate(clusterstate.KindLoadBalancer, l.ObjectMeta, why))
		case keep != "":
			kept = append(kept, candidate(clusterstate.KindLoadBalancer, l.ObjectMeta, keep))
		}
	}
	return candidates, kept, nil
}

// LeftBehind says why the LoadBalancer l of cluster is no longer needed by
// the guest g, or "" when it is (or is not the cloud provider's for
// cluster); keep says why a LoadBalancer that might be left behind is kept
// in doubt.
func LeftBehind(cluster string, l *lbapi.LoadBalancer, g *clusterstate.Guest) (why, keep string) {
	ns, name := l.Labels[harvester.LabelLBServiceNamespace], l.Labels[harvester.LabelLBServiceName]
	if l.DeletionTimestamp != nil || l.Labels[harvester.LabelLBCluster] != cluster || ns == "" || name == "" {
		return "", ""
	}
	ref := ns + "/" + name
	svc := g.Service(ns, name)
	switch {
	case (svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer) && sharedBy(g, ref) != "":
		return "", "" // another Service still uses its address
	case svc == nil:
		return "Service " + ref + " no longer exists in the guest cluster", ""
	case svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
		return "Service " + ref + " is of type " + string(svc.Spec.Type) + ", no longer LoadBalancer", ""
	}
	switch clusterstate.NameOwner(l.Name, cluster, ns, name, string(svc.UID)) {
	case clusterstate.OwnerOtherUID:
		return "Service " + ref + " was re-created (UID " + string(svc.UID) + "); this LoadBalancer belongs to an earlier one", ""
	case clusterstate.OwnerUnknown:
		return "", "Service " + ref + " is of type LoadBalancer and this LoadBalancer carries its labels, but its name is not what any cloud provider release " +
			"derives from that Service (for its UID " + string(svc.UID) + ": " + clusterstate.CloudProviderName(cluster, ns, name, string(svc.UID)) +
			"), so it cannot be shown to belong to another UID; kept"
	}
	return "", ""
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
