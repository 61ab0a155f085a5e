package clusterstate

import (
	"errors"
	"fmt"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// ErrNotTheCluster is why gc, doctor and maintenance-check refuse a
// --guest-kubeconfig that cannot be shown to be the named cluster: another
// cluster's Services would make the named cluster's LoadBalancers look left
// behind, another cluster's nodes would give its VMs no roles (no quorum
// judged).
var ErrNotTheCluster = errors.New("the guest cluster cannot be shown to be the named cluster")

// Identity is what Harvester holds that can show a guest cluster to be
// the named one: the VMs (of Namespace, or of every namespace when it is
// ""), and with ByLoadBalancer the LoadBalancers of the namespace.
type Identity struct {
	Target
	VMs []kubevirtv1.VirtualMachine
	// VMsFailed says why the VMs could not be listed ("" when they were).
	VMsFailed string
	// ByLoadBalancer: the guest's Services and these LoadBalancers were
	// listed and count as evidence.
	ByLoadBalancer bool
	LoadBalancers  []lbapi.LoadBalancer
}

// Identity is what h holds that can show a guest to be its cluster (gc,
// doctor: VMs and LoadBalancers of the namespace).
func (h *Harvester) Identity() Identity {
	return Identity{Target: h.Target, VMs: h.VMs, VMsFailed: h.Failed(KindVM), ByLoadBalancer: true, LoadBalancers: h.LoadBalancers}
}

// GuestIdentity is what h holds that can show the guest of
// --guest-kubeconfig to be cluster h.GuestCluster (maintenance-check:
// the VMs only; it lists no Services).
func (h *Hosts) GuestIdentity() Identity {
	return Identity{Target: Target{Cluster: h.GuestCluster, Namespace: h.Namespace}, VMs: h.VMs}
}

// VerifyGuest checks that the live guest g is id's cluster, the one rule
// of every command that takes --guest-kubeconfig. Evidence: a node whose
// providerID harvester://<UID> is the UID of a VM labelled for the cluster
// (the cloud provider sets it when it initialises the node), or, with
// id.ByLoadBalancer, a Service whose UID is the one a LoadBalancer of the
// cluster was named after (the cloud provider hashes the UID into the
// name; UIDs are random). A node running on a VM of another cluster, or no
// evidence at all, is refused, saying why and what would be valid.
func VerifyGuest(id Identity, g *Guest) error {
	evidence, against := nodeEvidence(id, g)
	if id.ByLoadBalancer {
		evidence = append(evidence, serviceEvidence(id, g)...)
	}
	valid := fmt.Sprintf("valid: the kubeconfig of cluster %s, whose nodes' providerIDs %s<UID> name VMs labelled %s", id.Cluster, harvester.ProviderIDPrefix, id.ClusterSelector())
	if id.ByLoadBalancer {
		valid += " or one of whose Services' UIDs a LoadBalancer of the cluster was named after"
	}
	valid += "; check --guest-kubeconfig, --cluster-name and --namespace, or leave out --guest-kubeconfig"
	switch {
	case len(against) > 0:
		return fmt.Errorf("%w %s: %s; %s", ErrNotTheCluster, id.Cluster, names(against), valid)
	case len(evidence) > 0:
		return nil
	}
	where := "in " + id.Namespace
	if id.Namespace == "" {
		where = "in any namespace"
	}
	why := fmt.Sprintf("none of its %d nodes has a providerID %s<UID> of a VM of the cluster %s (%d there)", len(g.Nodes), harvester.ProviderIDPrefix, where, len(ofCluster(id.Target, id.VMs)))
	if id.ByLoadBalancer {
		why += fmt.Sprintf(", and none of its %d Services has the UID a LoadBalancer of the cluster was named after", len(g.Services))
	}
	if e := g.Errors[KindNode]; e != "" {
		why += " (" + e + ")"
	}
	if id.VMsFailed != "" {
		why += " (" + id.VMsFailed + ")"
	}
	return fmt.Errorf("%w %s: %s; %s", ErrNotTheCluster, id.Cluster, why, valid)
}

// nodeEvidence: the guest's nodes that run on a VM of the cluster, and
// those that run on a VM of another (or of none).
func nodeEvidence(id Identity, g *Guest) (evidence, against []string) {
	vms := map[string]*kubevirtv1.VirtualMachine{} // by UID
	for i := range id.VMs {
		vms[string(id.VMs[i].UID)] = &id.VMs[i]
	}
	for _, n := range g.Nodes {
		uid, ok := strings.CutPrefix(n.Spec.ProviderID, harvester.ProviderIDPrefix)
		vm := vms[uid]
		switch {
		case !ok || vm == nil:
		case id.OfCluster(vm.Labels):
			evidence = append(evidence, "node "+n.Name+" runs on VM "+vm.Namespace+"/"+vm.Name)
		default:
			other := "no cluster"
			if c := vm.Labels[harvester.LabelGuestCluster]; c != "" {
				other = "cluster " + c
			}
			against = append(against, "node "+n.Name+" runs on VM "+vm.Namespace+"/"+vm.Name+", not labelled for cluster "+id.Cluster+" (labelled for "+other+")")
		}
	}
	return evidence, against
}

// serviceEvidence: the guest's Services whose UID a LoadBalancer of the
// cluster was named after.
func serviceEvidence(id Identity, g *Guest) []string {
	var evidence []string
	for _, l := range id.LoadBalancers {
		ns, name := l.Labels[harvester.LabelLBServiceNamespace], l.Labels[harvester.LabelLBServiceName]
		if l.Labels[harvester.LabelLBCluster] != id.Cluster || ns == "" || name == "" {
			continue
		}
		if svc := g.Service(ns, name); svc != nil && NameOwner(l.Name, id.Cluster, ns, name, string(svc.UID)) == OwnerThisUID {
			evidence = append(evidence, "LoadBalancer "+l.Name+" is named after Service "+ns+"/"+name+"'s UID")
		}
	}
	return evidence
}

// names joins up to 3 items.
func names(list []string) string {
	if len(list) > 3 {
		return strings.Join(list[:3], "; ") + fmt.Sprintf(" and %d more", len(list)-3)
	}
	return strings.Join(list, "; ")
}
