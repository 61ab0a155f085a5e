package doctor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/gc"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// Check names of the rows on the load balancers of a live guest cluster.
const (
	CheckLBLeftovers = "loadbalancer-leftovers"
	CheckLBAnnounced = "loadbalancer-announced"
)

// AnnotationAllowWithoutEndpoints makes kube-vip announce a Service that
// has no endpoints.
const AnnotationAllowWithoutEndpoints = "kube-vip.io/allow-reconcile-without-endpoints"

// What follows from each "no" of the loadbalancer-announced row.
const (
	NoStatusAddress = "the cloud provider will not delete this LoadBalancer when the Service goes"
	NoEndpoints     = "kube-vip does not announce a Service without endpoints"
	NoIngress       = "kube-vip has not announced it"
)

// guestKubeconfigArg is --guest-kubeconfig as the user gave it, for the
// commands the rows print.
func guestKubeconfigArg(s *clusterstate.Snapshot) string {
	if s.GuestKubeconfig == "" {
		return "FILE"
	}
	return s.GuestKubeconfig
}

// LBLeftovers: the cluster's LoadBalancers whose guest Service is gone, no
// longer of type LoadBalancer or re-created (gc.SelectLive).
func LBLeftovers(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	c, kept, err := gc.SelectLive(h, s.Guest)
	if err != nil {
		return fail(CheckLBLeftovers, err.Error(), "check that --guest-kubeconfig is the cluster's and may list Services and nodes, and --kubeconfig may list LoadBalancers and VMs in "+h.Namespace)
	}
	keptNote := ""
	if len(kept) > 0 {
		var list []string
		for _, x := range kept {
			list = append(list, x.Name+" ("+x.Reason+")")
		}
		keptNote = fmt.Sprintf("; kept in doubt, gc leaves them: %s", names(list))
	}
	if len(c) == 0 {
		return ok(CheckLBLeftovers, "none: each LoadBalancer of the cluster has its Service"+keptNote)
	}
	var list []string
	for _, x := range c {
		list = append(list, x.Name+" ("+x.Reason+")")
	}
	return warn(CheckLBLeftovers, fmt.Sprintf("%d holding pool addresses: %s%s", len(c), names(list), keptNote),
		"`harvester-bootstrap gc --cluster-name "+h.Cluster+" --namespace "+h.Namespace+" --guest-kubeconfig "+guestKubeconfigArg(s)+
			" --delete` deletes them and their addresses go back to the pool (without --delete it only lists them)")
}

// LBAnnounced: for each LoadBalancer of the cluster whose Service is
// current, whether the Service's ingress holds the allocated address,
// whether status.address is set, and whether the Service has ready
// endpoints; each "no" says what follows.
func LBAnnounced(s *clusterstate.Snapshot) Row {
	g, h := s.Guest, &s.Harvester
	if row, bad := unlisted(g.Errors, CheckLBAnnounced, clusterstate.KindService, clusterstate.KindEndpointSlice); bad {
		return row
	}
	if row, bad := unlisted(h.Errors, CheckLBAnnounced, clusterstate.KindLoadBalancer); bad {
		return row
	}
	var good, bad []string
	needResync := false
	for _, l := range clusterLBs(h) {
		svc := currentService(g, h.Cluster, &l)
		if svc == nil {
			continue // gone or re-created: the loadbalancer-leftovers row
		}
		lacks := announcedLacks(g, svc, &l)
		if len(lacks) == 0 {
			good = append(good, fmt.Sprintf("%s (%s/%s) %s announced", l.Name, svc.Namespace, svc.Name, l.Status.Address))
			continue
		}
		if l.Status.Address == "" {
			needResync = true
		}
		bad = append(bad, l.Name+" ("+svc.Namespace+"/"+svc.Name+"): "+strings.Join(lacks, "; "))
	}
	switch {
	case len(bad) > 0:
		fix := "give the Service endpoints (a pod its selector matches), or annotate it " + AnnotationAllowWithoutEndpoints + `="true"`
		if needResync {
			fix += "; once the ingress holds the address, change any annotation of the Service (`kubectl annotate service -n NS NAME " +
				"harvester-bootstrap/resync=1 --overwrite`): the cloud provider syncs and copies the ingress into status.address"
		}
		return warn(CheckLBAnnounced, names(bad), fix)
	case len(good) == 0:
		return ok(CheckLBAnnounced, "no LoadBalancer of the cluster with a current Service")
	}
	return ok(CheckLBAnnounced, names(good))
}

// currentService is l's Service when it still is the one l was made for.
func currentService(g *clusterstate.Guest, cluster string, l *lbapi.LoadBalancer) *corev1.Service {
	if why, _ := gc.LeftBehind(cluster, l, g); why != "" {
		return nil
	}
	svc := g.Service(l.Labels[harvester.LabelLBServiceNamespace], l.Labels[harvester.LabelLBServiceName])
	if svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	return svc
}

// announcedLacks lists each "no" with what follows from it.
func announcedLacks(g *clusterstate.Guest, svc *corev1.Service, l *lbapi.LoadBalancer) []string {
	var out []string
	allocated := l.Status.AllocatedAddress.IP
	switch ingress := ingressIPs(svc); {
	case allocated == "":
		out = append(out, "no address allocated yet (see the "+CheckLoadBalancers+" row)")
	case !strings.Contains(" "+ingress+" ", " "+allocated+" "):
		out = append(out, fmt.Sprintf("ingress %s does not hold %s: %s", orNone(ingress), allocated, NoIngress))
	}
	if l.Status.Address == "" {
		out = append(out, "status.address unset: "+NoStatusAddress)
	}
	if g.Endpoints(svc) == 0 && svc.Annotations[AnnotationAllowWithoutEndpoints] != "true" {
		out = append(out, "no endpoints: "+NoEndpoints)
	}
	return out
}

func ingressIPs(svc *corev1.Service) string {
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			ips = append(ips, in.IP)
		}
	}
	return strings.Join(ips, " ")
}
