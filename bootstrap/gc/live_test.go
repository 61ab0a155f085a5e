package gc

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
		Name: lbapi.CloudProviderName(cluster, "default", svc, uid), Namespace: ns, UID: types.UID("lb-" + svc + uid),
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
	got, err := SelectLive(h, g)
	if err != nil {
		t.Fatal(err)
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
	c, err := SelectLive(h, g)
	if c != nil || !errors.Is(err, ErrGuestUnlisted) {
		t.Errorf("SelectLive = %v, %v; want nothing and %v", c, err, ErrGuestUnlisted)
	}
	g.Errors = map[string]string{}
	h.Errors[clusterstate.KindLoadBalancer] = "list LoadBalancers: forbidden"
	if c, err := SelectLive(h, g); c != nil || err == nil {
		t.Errorf("SelectLive without the LoadBalancers = %v, %v; want an error", c, err)
	}
}

func TestMerge(t *testing.T) {
	a := []Candidate{{Kind: "LoadBalancer", Namespace: ns, Name: "x"}}
	b := []Candidate{{Kind: "LoadBalancer", Namespace: ns, Name: "x"}, {Kind: "LoadBalancer", Namespace: ns, Name: "y"}}
	if got := Merge(a, b); len(got) != 2 || got[1].Name != "y" {
		t.Errorf("Merge = %v", got)
	}
}
