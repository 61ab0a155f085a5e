package gc

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/loadbalancer"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

func service(name, uid string, typ corev1.ServiceType) corev1.Service {
	return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)}, Spec: corev1.ServiceSpec{Type: typ}}
}

// ccmLB is the cloud provider's LoadBalancer of cluster's Service
// default/svc with UID uid.
func ccmLB(cluster, svc, uid string) lbapi.LoadBalancer {
	return lbapi.LoadBalancer{ObjectMeta: metav1.ObjectMeta{
		Name: clusterstate.CloudProviderName(cluster, "default", svc, uid), Namespace: ns, UID: types.UID("lb-" + svc + uid),
		Labels: map[string]string{harvester.LabelLBCluster: cluster, harvester.LabelLBServiceNamespace: "default", harvester.LabelLBServiceName: svc},
	}}
}

func TestSelectLive(t *testing.T) {
	live := ccmLB("a", "web", "u1")
	gone := ccmLB("a", "old", "u2")
	retyped := ccmLB("a", "np", "u3")
	recreated := ccmLB("a", "api", "u4-old")
	current := ccmLB("a", "api", "u4")
	otherCluster := ccmLB("b", "gone", "u5")
	unlabelled := ccmLB("a", "x", "u6")
	unlabelled.Labels = map[string]string{harvester.LabelLBCluster: "a"}
	deleting := ccmLB("a", "y", "u7")
	deleting.DeletionTimestamp = &metav1.Time{}
	shared := ccmLB("a", "primary", "u8") // its Service gone, its address still shared by default/secondary
	secondary := service("secondary", "u9", corev1.ServiceTypeLoadBalancer)
	secondary.Annotations = map[string]string{loadbalancer.AnnPrimaryService: "default/primary"}
	h := &clusterstate.Harvester{Target: clusterstate.Target{Cluster: "a", Namespace: ns}, Errors: map[string]string{},
		LoadBalancers: []lbapi.LoadBalancer{live, gone, retyped, recreated, current, otherCluster, unlabelled, deleting, shared}}
	g := &clusterstate.Guest{Errors: map[string]string{}, Services: []corev1.Service{
		service("web", "u1", corev1.ServiceTypeLoadBalancer), service("np", "u3", corev1.ServiceTypeNodePort),
		service("api", "u4", corev1.ServiceTypeLoadBalancer), secondary,
	}}
	got, kept, err := SelectLive(h, g)
	if err != nil || len(kept) != 0 {
		t.Fatal(err, kept)
	}
	var reasons []string
	for _, c := range got {
		reasons = append(reasons, c.Name+": "+c.Reason)
	}
	want := []string{
		gone.Name + ": Service default/old no longer exists in the guest cluster",
		retyped.Name + ": Service default/np is of type NodePort, no longer LoadBalancer",
		recreated.Name + ": Service default/api was re-created (UID u4); this LoadBalancer belongs to an earlier one",
	}
	if !slices.Equal(reasons, want) {
		t.Errorf("SelectLive =\n%q\nwant\n%q", reasons, want)
	}
	if got[0].UID != string(gone.UID) {
		t.Errorf("candidate UID %q, want the LoadBalancer's %q (the delete's precondition)", got[0].UID, gone.UID)
	}
}

func TestSelectLiveRefusesWithoutTheGuestsServices(t *testing.T) {
	h := &clusterstate.Harvester{Target: clusterstate.Target{Cluster: "a", Namespace: ns}, Errors: map[string]string{},
		LoadBalancers: []lbapi.LoadBalancer{ccmLB("a", "web", "u1")}}
	g := &clusterstate.Guest{Errors: map[string]string{clusterstate.KindService: "list Services in the guest cluster: Unauthorized"}}
	c, _, err := SelectLive(h, g)
	if c != nil || !errors.Is(err, ErrGuestUnlisted) {
		t.Errorf("SelectLive = %v, %v; want nothing and %v", c, err, ErrGuestUnlisted)
	}
	g.Errors = map[string]string{}
	h.Errors[clusterstate.KindLoadBalancer] = "list LoadBalancers: forbidden"
	if c, _, err := SelectLive(h, g); c != nil || err == nil {
		t.Errorf("SelectLive without the LoadBalancers = %v, %v; want an error", c, err)
	}
}

// labelledLB is a LoadBalancer of cluster for Service svcNS/svc, named
// name (a literal: what the cloud provider named it).
func labelledLB(name, cluster, svcNS, svc string) lbapi.LoadBalancer {
	return lbapi.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("lb-" + name),
		Labels: map[string]string{harvester.LabelLBCluster: cluster, harvester.LabelLBServiceNamespace: svcNS, harvester.LabelLBServiceName: svc}}}
}

func lbService(namespace, name, uid string) corev1.Service {
	s := service(name, uid, corev1.ServiceTypeLoadBalancer)
	s.Namespace = namespace
	return s
}

// Issue 33, item 1: Services whose prefix is longer than 55 characters
// keep their LoadBalancers. The names are the cloud provider v0.2.7's for
// these UIDs, worked out with an independent crc32 (Python zlib) from its
// loadBalancerName; the old rule (hash of the cut prefix) took them for
// re-created Services' and deleted them.
func TestSelectLiveKeepsLongNames(t *testing.T) {
	const cluster = "rke2-prod-cluster-01"
	nginx := labelledLB("rke2-prod-cluster-01-ingress-nginx-ingress-nginx-controf4071685", cluster, "ingress-nginx", "ingress-nginx-controller")
	gapps := labelledLB("guest-a-gapps-frontend-web-application-public-https-apib92d34f0", "guest-a", "gapps", "frontend-web-application-public-https-api")
	// The same Service re-created: the name of the earlier UID.
	earlier := labelledLB("rke2-prod-cluster-01-ingress-nginx-ingress-nginx-contro63087170", cluster, "ingress-nginx", "ingress-nginx-controller")
	// Labelled for the Service but named by no rule: kept in doubt.
	odd := labelledLB("hand-made-lb", cluster, "ingress-nginx", "ingress-nginx-controller")
	g := &clusterstate.Guest{Errors: map[string]string{}, Services: []corev1.Service{
		lbService("ingress-nginx", "ingress-nginx-controller", "0f3d1a52-8b7e-4c33-a2d1-5e9f4b6c7d80"),
		lbService("gapps", "frontend-web-application-public-https-api", "4b1c9e2a-6d3f-4e8a-b7c5-2a1d0f9e8c76"),
	}}
	h := &clusterstate.Harvester{Target: clusterstate.Target{Cluster: cluster, Namespace: ns}, Errors: map[string]string{},
		LoadBalancers: []lbapi.LoadBalancer{nginx, earlier, odd}}
	got, kept, err := SelectLive(h, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != earlier.Name {
		t.Errorf("candidates %+v, want only %s", got, earlier.Name)
	}
	if len(kept) != 1 || kept[0].Name != odd.Name || !strings.Contains(kept[0].Reason, "cannot be shown to belong to another UID") {
		t.Errorf("kept %+v, want %s kept in doubt", kept, odd.Name)
	}
	h = &clusterstate.Harvester{Target: clusterstate.Target{Cluster: "guest-a", Namespace: ns}, Errors: map[string]string{},
		LoadBalancers: []lbapi.LoadBalancer{gapps}}
	if got, _, err := SelectLive(h, g); err != nil || len(got) != 0 {
		t.Errorf("gapps: SelectLive = %+v, %v; want nothing", got, err)
	}
}

func node(name, providerID string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

// Issue 33, item 8: gc takes the guest for the named cluster only on
// evidence (clusterstate.VerifyGuest, whose cases are tested there), and
// refuses otherwise.
func TestSelectRefusesAnotherCluster(t *testing.T) {
	vmA := vmOf("a-p-a1", "a")
	vmA.UID = "vm-a1"
	vmB := vmOf("b-p-b1", "b")
	vmB.UID = "vm-b1"
	h := &clusterstate.Harvester{Target: clusterstate.Target{Cluster: "a", Namespace: ns}, Errors: map[string]string{},
		VMs: []kubevirtv1.VirtualMachine{vmA, vmB}, LoadBalancers: []lbapi.LoadBalancer{ccmLB("a", "web", "u1")}}
	for _, nodes := range [][]corev1.Node{{node("n1", "harvester://vm-a1"), node("n2", "harvester://vm-b1")}, {node("n1", "")}} {
		g := &clusterstate.Guest{Errors: map[string]string{}, Nodes: nodes}
		if _, _, err := SelectLive(h, g); !errors.Is(err, clusterstate.ErrNotTheCluster) {
			t.Errorf("SelectLive = %v, want a refusal", err)
		}
		if _, err := Select(h, g, testNow); !errors.Is(err, clusterstate.ErrNotTheCluster) {
			t.Errorf("Select = %v, want a refusal", err)
		}
	}
	g := &clusterstate.Guest{Errors: map[string]string{}, Nodes: []corev1.Node{node("n1", "harvester://vm-a1")}}
	if _, _, err := SelectLive(h, g); err != nil {
		t.Errorf("SelectLive of the cluster's own guest: %v", err)
	}
}

// Issue 33, item 8: with no VM of the cluster left, a Service the live
// guest (shown to be the cluster) lists still keeps its LoadBalancer, and
// the credential its cloud provider uses stays.
func TestSelectWithGuestAndNoVMLeft(t *testing.T) {
	h := state()
	h.VMs = h.VMs[1:] // only cluster b's
	web := ccmLB("a", "web", "u1")
	gone := ccmLB("a", "old", "u2")
	h.LoadBalancers = []lbapi.LoadBalancer{web, gone}
	g := &clusterstate.Guest{Errors: map[string]string{}, Services: []corev1.Service{service("web", "u1", corev1.ServiceTypeLoadBalancer)}}
	sel, err := Select(h, g, testNow)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"LoadBalancer default/" + gone.Name,
		"Secret default/a-p-a1-cloudinit", "Secret default/a-p-a2-cloudinit",
		"PersistentVolumeClaim default/a-p-a1-disk-0", "PersistentVolumeClaim default/a-p-a2-disk-0"}
	if !slices.Equal(refs(sel.Candidates), want) {
		t.Errorf("Select =\n%q\nwant\n%q", refs(sel.Candidates), want)
	}
	without, err := Select(h, nil, testNow)
	if err != nil || !slices.Contains(refs(without.Candidates), "LoadBalancer default/"+web.Name) {
		t.Errorf("without the guest: %q, %v; want every LoadBalancer", refs(without.Candidates), err)
	}
}
