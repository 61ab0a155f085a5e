package lb

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// TestSelectPool: the expected pools and messages are worked out from
// load-balancer-harvester v1.8.1's pkg/ipam/selector.go (Select, isMatch)
// and pkg/controller/loadbalancer/controller.go (selectIPPool).
func TestSelectPool(t *testing.T) {
	scope := func(project, namespace, cluster string) []lbapi.Scope {
		return []lbapi.Scope{{Project: project, Namespace: namespace, GuestCluster: cluster}}
	}
	mk := func(name string, sel lbapi.Selector, global bool) lbapi.IPPool {
		p := lbapi.IPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: lbapi.IPPoolSpec{Selector: sel}}
		if global {
			p.Labels = map[string]string{lbapi.LabelGlobalPool: "true"}
		}
		return p
	}
	global := mk("global", lbapi.Selector{Scope: scope(lbapi.All, lbapi.All, lbapi.All)}, true)
	ns := mk("ns", lbapi.Selector{Scope: scope(lbapi.All, "default", lbapi.All)}, false)
	nsHigh := mk("ns-high", lbapi.Selector{Priority: 5, Scope: scope(lbapi.All, "default", lbapi.All)}, false)
	nsTie := mk("ns-tie", lbapi.Selector{Scope: scope(lbapi.All, "default", lbapi.All)}, false)
	net := mk("net", lbapi.Selector{Network: "default/vlan1", Scope: scope(lbapi.All, lbapi.All, lbapi.All)}, false)
	emptyCluster := mk("empty-cluster", lbapi.Selector{Scope: scope(lbapi.All, "default", "")}, false)
	lbOf := func(workload string, ann map[string]string) *lbapi.LoadBalancer {
		return &lbapi.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: "default", Annotations: ann},
			Spec: lbapi.LoadBalancerSpec{WorkloadType: workload}}
	}
	cluster := map[string]string{lbapi.AnnCluster: "c"}
	cases := []struct {
		name    string
		pools   []lbapi.IPPool
		lb      *lbapi.LoadBalancer
		want    string
		wantErr string
	}{
		{"namespace scope over the global pool", []lbapi.IPPool{global, ns}, lbOf(lbapi.WorkloadCluster, cluster), "ns", ""},
		{"higher priority wins", []lbapi.IPPool{nsHigh, ns}, lbOf(lbapi.WorkloadCluster, cluster), "ns-high", ""},
		{"equal priority: the last listed", []lbapi.IPPool{ns, nsTie}, lbOf(lbapi.WorkloadCluster, cluster), "ns-tie", ""},
		{"network must be equal", []lbapi.IPPool{net, global}, lbOf(lbapi.WorkloadCluster, cluster), "global", ""},
		{"network annotation", []lbapi.IPPool{net, global}, lbOf(lbapi.WorkloadCluster, map[string]string{lbapi.AnnNetwork: "default/vlan1"}), "net", ""},
		{"empty guest cluster: loose mode for a cluster LoadBalancer", []lbapi.IPPool{emptyCluster}, lbOf(lbapi.WorkloadCluster, cluster), "empty-cluster", ""},
		{"empty guest cluster: strict only for a VM LoadBalancer", []lbapi.IPPool{emptyCluster}, lbOf(lbapi.WorkloadVM, cluster), "",
			"no matched IPPool with requirement &{Network: Project: Namespace:default Cluster:c}"},
		{"nothing at all", nil, lbOf(lbapi.WorkloadCluster, map[string]string{lbapi.AnnNamespace: "other"}), "",
			"no matched IPPool with requirement &{Network: Project: Namespace:other Cluster:}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := SelectPool(c.pools, c.lb)
			switch {
			case c.wantErr != "":
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("SelectPool: %v, %v; want error %q", p, err, c.wantErr)
				}
			case err != nil || p == nil || p.Name != c.want:
				t.Fatalf("SelectPool: %v, %v; want %s", p, err, c.want)
			}
		})
	}
}
