package loadbalancer

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

func pool(name string, ranges []lbapi.Range, sel lbapi.Selector) lbapi.IPPool {
	return lbapi.IPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: lbapi.IPPoolSpec{Ranges: ranges, Selector: sel}}
}

func scope(project, namespace, cluster string) []lbapi.Scope {
	return []lbapi.Scope{{Project: project, Namespace: namespace, GuestCluster: cluster}}
}

func TestSelectPool(t *testing.T) {
	r24 := []lbapi.Range{{Subnet: "10.0.0.0/24"}}
	pools := []lbapi.IPPool{
		pool("global", r24, lbapi.Selector{Scope: scope(lbapi.All, lbapi.All, lbapi.All)}),
		pool("cluster-a", r24, lbapi.Selector{Scope: scope(lbapi.All, lbapi.All, "a")}),
		pool("cluster-a-high", r24, lbapi.Selector{Priority: 10, Scope: scope(lbapi.All, "prod", "a")}),
		pool("cluster-b", r24, lbapi.Selector{Scope: scope(lbapi.All, lbapi.All, "b")}),
		pool("vlan2", r24, lbapi.Selector{Network: "default/vlan2", Scope: scope(lbapi.All, "default", lbapi.All)}),
		pool("project-x", r24, lbapi.Selector{Scope: scope("x", "default", lbapi.All)}),
	}
	noGlobal := pools[1:]
	tests := []struct {
		name  string
		pools []lbapi.IPPool
		req   Requirement
		want  string
		err   string
	}{
		{"cluster scope", pools, Requirement{Namespace: "default", Cluster: "a"}, "cluster-a", ""},
		{"other cluster's pool not used", pools, Requirement{Namespace: "default", Cluster: "b"}, "cluster-b", ""},
		{"priority wins", pools, Requirement{Namespace: "prod", Cluster: "a"}, "cluster-a-high", ""},
		{"network must be equal", pools, Requirement{Network: "default/vlan2", Namespace: "default", Cluster: "zzz"}, "vlan2", ""},
		{"network differs: global", pools, Requirement{Network: "default/vlan3", Namespace: "default", Cluster: "a"}, "global", ""},
		{"project scope", pools, Requirement{Project: "x", Namespace: "default"}, "project-x", ""},
		{"no match: global fallback", pools, Requirement{Namespace: "default", Cluster: "c"}, "global", ""},
		// Harvester's selectIPPool prints its *ipam.Requirement with %+v
		// (load-balancer-harvester v1.8.0, pkg/controller/loadbalancer/controller.go).
		{"no match, no global", noGlobal, Requirement{Namespace: "default", Cluster: "c"}, "",
			"no matched IPPool with requirement &{Network: Project: Namespace:default Cluster:c}"},
		// Then loose mode for a cluster LoadBalancer (isMatch, pkg/ipam/selector.go):
		// the pool's empty project and guest cluster match anything.
		{"loose mode without a global pool", append(noGlobal[:len(noGlobal):len(noGlobal)],
			pool("any-cluster", r24, lbapi.Selector{Scope: scope("", "default", "")})), Requirement{Project: "p", Namespace: "default", Cluster: "c"}, "any-cluster", ""},
		{"strict mode first: the global pool over loose matches", append(pools[:len(pools):len(pools)],
			pool("any-cluster", r24, lbapi.Selector{Scope: scope("", "default", "")})), Requirement{Project: "p", Namespace: "default", Cluster: "c"}, "global", ""},
		{"requirement * matches anything", noGlobal, Requirement{Namespace: "default", Cluster: lbapi.All}, "cluster-a", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectPool(tc.pools, tc.req)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.Name != tc.want {
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestRequirementOf(t *testing.T) {
	l := &lbapi.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Annotations: map[string]string{lbapi.AnnCluster: "c", lbapi.AnnProject: "p"}}}
	if got := RequirementOf(l); got != (Requirement{Project: "p", Namespace: "ns1", Cluster: "c"}) {
		t.Fatalf("RequirementOf = %+v", got)
	}
	l.Annotations[lbapi.AnnNamespace] = "other"
	if got := RequirementOf(l); got.Namespace != "other" {
		t.Fatalf("namespace annotation ignored: %+v", got)
	}
}

func TestIsGlobal(t *testing.T) {
	if !IsGlobal(&lbapi.IPPool{Spec: lbapi.IPPoolSpec{Selector: lbapi.Selector{Scope: scope(lbapi.All, lbapi.All, lbapi.All)}}}) {
		t.Fatal("*/*/* pool is not global")
	}
	if IsGlobal(&lbapi.IPPool{Spec: lbapi.IPPoolSpec{Selector: lbapi.Selector{Scope: append(scope(lbapi.All, lbapi.All, lbapi.All), scope("p", lbapi.All, lbapi.All)...)}}}) {
		t.Fatal("pool with two scopes is global")
	}
	if !IsGlobal(&lbapi.IPPool{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{lbapi.LabelGlobalPool: "true"}}}) {
		t.Fatal("labelled pool is not global")
	}
}
