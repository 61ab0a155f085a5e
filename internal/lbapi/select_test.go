package lbapi

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pool(name string, ranges []Range, sel Selector) IPPool {
	return IPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: IPPoolSpec{Ranges: ranges, Selector: sel}}
}

func scope(project, namespace, cluster string) []Scope {
	return []Scope{{Project: project, Namespace: namespace, GuestCluster: cluster}}
}

func TestSelectPool(t *testing.T) {
	r24 := []Range{{Subnet: "10.0.0.0/24"}}
	pools := []IPPool{
		pool("global", r24, Selector{Scope: scope(All, All, All)}),
		pool("cluster-a", r24, Selector{Scope: scope(All, All, "a")}),
		pool("cluster-a-high", r24, Selector{Priority: 10, Scope: scope(All, "prod", "a")}),
		pool("cluster-b", r24, Selector{Scope: scope(All, All, "b")}),
		pool("vlan2", r24, Selector{Network: "default/vlan2", Scope: scope(All, "default", All)}),
		pool("project-x", r24, Selector{Scope: scope("x", "default", All)}),
	}
	noGlobal := pools[1:]
	tests := []struct {
		name  string
		pools []IPPool
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
		{"no match, no global", noGlobal, Requirement{Namespace: "default", Cluster: "c"}, "",
			"no matched IPPool with requirement {Network: Project: Namespace:default Cluster:c}"},
		{"requirement * matches anything", noGlobal, Requirement{Namespace: "default", Cluster: All}, "cluster-a", ""},
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
	l := &LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Annotations: map[string]string{AnnCluster: "c", AnnProject: "p"}}}
	if got := RequirementOf(l); got != (Requirement{Project: "p", Namespace: "ns1", Cluster: "c"}) {
		t.Fatalf("RequirementOf = %+v", got)
	}
	l.Annotations[AnnNamespace] = "other"
	if got := RequirementOf(l); got.Namespace != "other" {
		t.Fatalf("namespace annotation ignored: %+v", got)
	}
}

func TestIsGlobal(t *testing.T) {
	if !IsGlobal(&IPPool{Spec: IPPoolSpec{Selector: Selector{Scope: scope(All, All, All)}}}) {
		t.Fatal("*/*/* pool is not global")
	}
	if IsGlobal(&IPPool{Spec: IPPoolSpec{Selector: Selector{Scope: append(scope(All, All, All), scope("p", All, All)...)}}}) {
		t.Fatal("pool with two scopes is global")
	}
	if !IsGlobal(&IPPool{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelGlobalPool: "true"}}}) {
		t.Fatal("labelled pool is not global")
	}
}
