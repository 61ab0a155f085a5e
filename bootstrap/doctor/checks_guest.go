package doctor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// Check names of the guest-side checks.
const (
	CheckNodes         = "guest-nodes"
	CheckZones         = "guest-zones"
	CheckCCMCluster    = "ccm-cluster-name"
	CheckGuestServices = "guest-loadbalancers"
)

// Guest runs the guest-side checks (none without --guest-kubeconfig).
func Guest(s *clusterstate.Snapshot) []Row {
	if s.Guest == nil {
		return nil
	}
	return []Row{Nodes(s), Zones(s), CCMClusterName(s), KubeVIP(s), GuestServices(s), LBAnnounced(s), LBLeftovers(s), GuestVolumes(s)}
}

// Nodes: the cloud provider initialised every node (providerID
// harvester://..., no uninitialized taint).
func Nodes(s *clusterstate.Snapshot) Row {
	g := s.Guest
	if row, bad := unlisted(g.Errors, CheckNodes, clusterstate.KindNode); bad {
		return row
	}
	var bad []string
	for _, n := range g.Nodes {
		var lack []string
		if !strings.HasPrefix(n.Spec.ProviderID, harvester.ProviderIDPrefix) {
			lack = append(lack, "providerID "+quoteOrNone(n.Spec.ProviderID))
		}
		for _, t := range n.Spec.Taints {
			if t.Key == harvester.TaintUninitialized {
				lack = append(lack, "taint "+t.Key)
			}
		}
		if len(lack) > 0 {
			bad = append(bad, n.Name+" ("+strings.Join(lack, ", ")+")")
		}
	}
	switch {
	case len(bad) > 0:
		return fail(CheckNodes, "not initialised by the cloud provider: "+names(bad),
			"check that the harvester-cloud-provider pods run in kube-system and their logs (credential, --cluster-name; node name = VM name)")
	case len(g.Nodes) == 0:
		return warn(CheckNodes, "the guest cluster has no nodes", "")
	}
	return ok(CheckNodes, fmt.Sprintf("%d nodes with providerID %s... and no %s taint", len(g.Nodes), harvester.ProviderIDPrefix, harvester.TaintUninitialized))
}

func quoteOrNone(s string) string {
	if s == "" {
		return "unset"
	}
	return fmt.Sprintf("%q", s)
}

// Zones: each node's zone label equals its VM's host zone (the VMI's
// topology annotation).
func Zones(s *clusterstate.Snapshot) Row {
	g, h := s.Guest, &s.Harvester
	if row, bad := unlisted(g.Errors, CheckZones, clusterstate.KindNode); bad {
		return row
	}
	var bad, good []string
	for _, n := range g.Nodes {
		vmi := h.VMI(n.Name)
		if vmi == nil {
			bad = append(bad, n.Name+" (no VMI of that name in "+h.Namespace+")")
			continue
		}
		want, got := vmi.Annotations[harvester.ZoneKey], n.Labels[harvester.ZoneKey]
		if want != got {
			bad = append(bad, fmt.Sprintf("%s (node %s, host %s)", n.Name, quoteOrNone(got), quoteOrNone(want)))
		} else {
			good = append(good, n.Name+" "+got)
		}
	}
	if len(bad) > 0 {
		return fail(CheckZones, "zone label differs from the VM's host: "+names(bad),
			"see the "+CheckCreator+" and "+CheckTopology+" rows; the cloud provider copies the VMI's zone when it initialises or updates the node")
	}
	return ok(CheckZones, names(good))
}

// ccmClusterNames are the --cluster-name values of the cloud provider's
// containers in kube-system ("" for a container without the flag).
func ccmClusterNames(g *clusterstate.Guest) map[string]string {
	out := map[string]string{}
	look := func(kind, name string, spec corev1.PodSpec) {
		for _, c := range spec.Containers {
			if !isCCM(c) {
				continue
			}
			args := append(append([]string{}, c.Command...), c.Args...)
			out[kind+" "+name] = flagValue(args, harvester.CCMClusterNameFlag)
		}
	}
	for _, d := range g.Deployments {
		look("Deployment", d.Name, d.Spec.Template.Spec)
	}
	for _, d := range g.DaemonSets {
		look("DaemonSet", d.Name, d.Spec.Template.Spec)
	}
	return out
}

func isCCM(c corev1.Container) bool {
	return strings.Contains(c.Image, "harvester-cloud-provider") || strings.Contains(c.Name, "harvester-cloud-provider") ||
		(len(c.Command) > 0 && strings.HasSuffix(c.Command[0], "harvester-cloud-provider"))
}

// flagValue is the value of --flag=v or --flag v in args.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if v, found := strings.CutPrefix(a, flag+"="); found {
			return v
		}
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// CCMClusterName: the cloud provider's --cluster-name equals NAME.
func CCMClusterName(s *clusterstate.Snapshot) Row {
	g, h := s.Guest, &s.Harvester
	if row, bad := unlisted(g.Errors, CheckCCMCluster, clusterstate.KindWorkload); bad {
		return row
	}
	found := ccmClusterNames(g)
	if len(found) == 0 {
		return fail(CheckCCMCluster, "no harvester-cloud-provider Deployment or DaemonSet in kube-system",
			"install the cloud provider: `harvester-bootstrap apply --guest-kubeconfig F --cluster-name "+h.Cluster+"` (or RKE2's cloud-provider-name: harvester)")
	}
	var bad, seen []string
	for w, v := range found {
		if v == "" {
			v = DefaultCCMCluster + " (flag not set)"
		}
		seen = append(seen, w+" "+harvester.CCMClusterNameFlag+"="+v)
		if v != h.Cluster {
			bad = append(bad, w+" "+harvester.CCMClusterNameFlag+"="+v)
		}
	}
	if len(bad) > 0 {
		return fail(CheckCCMCluster, names(bad)+", want "+h.Cluster,
			"run the cloud provider with "+harvester.CCMClusterNameFlag+"="+h.Cluster+" (its LoadBalancers are labelled and matched to IP pools by it)")
	}
	return ok(CheckCCMCluster, names(seen))
}

// lbOfService finds the Harvester LoadBalancer the cloud provider made for
// a Service (by its service labels): the cluster's one named after this
// Service's UID first, then any of the cluster's (an earlier Service's),
// then one labelled with another cluster.
func lbOfService(h *clusterstate.Harvester, svc corev1.Service) *lbapi.LoadBalancer {
	var earlier, other *lbapi.LoadBalancer
	for i := range h.LoadBalancers {
		l := &h.LoadBalancers[i]
		if l.Labels[harvester.LabelLBServiceNamespace] != svc.Namespace || l.Labels[harvester.LabelLBServiceName] != svc.Name {
			continue
		}
		switch {
		case l.Labels[harvester.LabelLBCluster] != h.Cluster:
			other = l
		case clusterstate.NameOwner(l.Name, h.Cluster, svc.Namespace, svc.Name, string(svc.UID)) == clusterstate.OwnerThisUID:
			return l
		default:
			earlier = l
		}
	}
	if earlier != nil {
		return earlier
	}
	return other
}

// GuestServices: each LoadBalancer Service with the state of its Harvester
// LoadBalancer.
func GuestServices(s *clusterstate.Snapshot) Row {
	g, h := s.Guest, &s.Harvester
	if row, bad := unlisted(g.Errors, CheckGuestServices, clusterstate.KindService); bad {
		return row
	}
	if row, bad := unlisted(h.Errors, CheckGuestServices, clusterstate.KindLoadBalancer); bad {
		return row
	}
	var bad, good []string
	for _, svc := range g.LoadBalancerServices() {
		ref := svc.Namespace + "/" + svc.Name
		l := lbOfService(h, svc)
		switch {
		case l == nil:
			bad = append(bad, ref+": no Harvester LoadBalancer (the cloud provider has not created one)")
		case l.Labels[harvester.LabelLBCluster] != h.Cluster:
			bad = append(bad, fmt.Sprintf("%s: LoadBalancer %s carries cluster %q", ref, l.Name, l.Labels[harvester.LabelLBCluster]))
		case Address(l) == "":
			bad = append(bad, ref+": LoadBalancer "+l.Name+" has no address: "+NoAddressReason(l))
		default:
			good = append(good, ref+" "+Address(l))
		}
	}
	switch {
	case len(bad) > 0:
		return fail(CheckGuestServices, names(bad),
			"see the "+CheckCCMCluster+", "+CheckLoadBalancers+" and "+CheckIPPools+" rows")
	case len(good) == 0:
		return ok(CheckGuestServices, "no Service of type LoadBalancer")
	}
	return ok(CheckGuestServices, names(good))
}
