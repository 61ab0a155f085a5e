package harvester

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestMachineLabels(t *testing.T) {
	long := strings.Repeat("verylongclustername", 5)
	cases := []struct {
		name, ns, machine, cluster string
		want                       map[string]string
	}{
		{"rancher names", "default", "c1-pool1-x7k2p", "c1", map[string]string{
			LabelMachineSet: "default-c1-pool1", LabelNodePool: "pool1", LabelGuestCluster: "c1", LabelVMName: "c1-pool1-x7k2p"}},
		{"rancher v2 names", "default", "c1-pool1-7d9f8-x7k2p", "c1", map[string]string{
			LabelMachineSet: "default-c1-pool1-7d9f8", LabelNodePool: "pool1-7d9f8"}},
		{"no dash", "default", "single", "c1", map[string]string{LabelMachineSet: "default-single", LabelNodePool: "single"}},
		{"no cluster", "default", "a-b", "", map[string]string{LabelMachineSet: "default-a"}},
		{"trailing dash", "default", "a-", "", map[string]string{LabelMachineSet: "default-a"}},
		{"leading dash", "ns", "-a", "", map[string]string{LabelMachineSet: "ns--a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := MachineLabels(tc.ns, tc.machine, tc.cluster)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if got[LabelCreator] != CreatorValue {
				t.Errorf("creator label missing")
			}
			if tc.cluster == "" {
				if _, ok := got[LabelGuestCluster]; ok {
					t.Errorf("guest cluster label without cluster")
				}
			}
			for k, v := range got {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q invalid: %v", k, v, errs)
				}
			}
		})
	}
	got := MachineLabels("default", long+"-pool-abc", long)
	for k, v := range got {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 || len(v) > 63 {
			t.Errorf("long names: label %s=%q invalid: %v", k, v, errs)
		}
	}
}

func TestLabelValue(t *testing.T) {
	a := LabelValue(strings.Repeat("x", 70) + "a")
	b := LabelValue(strings.Repeat("x", 70) + "b")
	if a == b || len(a) != 63 {
		t.Errorf("long values must stay distinct and 63 long: %q %q", a, b)
	}
	for _, in := range []string{"", "-", "ä-ö", "a/b c", "__x__", strings.Repeat("-", 80) + "z"} {
		if v := LabelValue(in); len(validation.IsValidLabelValue(v)) > 0 {
			t.Errorf("LabelValue(%q) = %q is invalid", in, v)
		}
	}
}

func TestMergeAffinity(t *testing.T) {
	def := MergeAffinity(nil, "default-c1-pool1")
	terms := def.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" ||
		terms[0].PodAffinityTerm.LabelSelector.MatchLabels[LabelMachineSet] != "default-c1-pool1" {
		t.Fatalf("default anti-affinity: %+v", def)
	}
	user := &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}},
		PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 5, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone"}}}},
	}
	merged := MergeAffinity(user, "s")
	if merged.NodeAffinity == nil || len(merged.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 {
		t.Errorf("user affinity not kept: %+v", merged)
	}
	if len(user.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("input modified")
	}
	if again := MergeAffinity(merged, "s"); len(again.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 {
		t.Errorf("default term added twice")
	}
}

// A pool's machine-set value, derived from cluster and pool or from any
// machine name of the pool, is the one MachineLabels puts on its VMs.
func TestPoolMachineSetValueMatchesMachineLabels(t *testing.T) {
	cases := []struct{ ns, cluster, pool, machine string }{
		{"default", "guest-a", "pool1", "guest-a-pool1-x7k2p"},
		{"guests", "c1", "pool1-7d9f8", "c1-pool1-7d9f8-abcde"},
		{"default", strings.Repeat("long", 20), "workers", strings.Repeat("long", 20) + "-workers-zz999"},
	}
	for _, c := range cases {
		want := MachineLabels(c.ns, c.machine, c.cluster)[LabelMachineSet]
		if got := PoolMachineSetValue(c.ns, c.cluster, c.pool); got != want {
			t.Errorf("PoolMachineSetValue(%q, %q, %q) = %q, VMs carry %q", c.ns, c.cluster, c.pool, got, want)
		}
		if got := MachineNameMachineSetValue(c.ns, c.machine); got != want {
			t.Errorf("MachineNameMachineSetValue(%q, %q) = %q, VMs carry %q", c.ns, c.machine, got, want)
		}
	}
	if got := PoolMachineSetValue("default", "guest-a", "pool1"); got != "default-guest-a-pool1" {
		t.Errorf("got %q", got)
	}
}

func TestZoneSelector(t *testing.T) {
	if ZoneSelector(nil, nil) != nil {
		t.Error("selector without zones or regions")
	}
	sel := ZoneSelector([]string{"r1"}, []string{"z1", "z2"})
	reqs := sel.NodeSelectorTerms[0].MatchExpressions
	if len(reqs) != 2 || reqs[0].Key != RegionKey || reqs[1].Key != ZoneKey || len(reqs[1].Values) != 2 {
		t.Errorf("requirements: %+v", reqs)
	}
}

func TestSplitNamespacedName(t *testing.T) {
	cases := []struct {
		in, def, ns, name, err string
	}{
		{in: "default/vlan1", ns: "default", name: "vlan1"},
		{in: "img", def: "guests", ns: "guests", name: "img"},
		{in: "vlan1", err: "is not <namespace>/<name> (for example"},
		{in: "a/b/c", def: "x", err: "is not <namespace>/<name> or <name>"},
		{in: "Bad_NS/x_y", err: "namespace \"Bad_NS\" is not a DNS-1123 label; name \"x_y\""},
	}
	for _, c := range cases {
		ns, name, err := SplitNamespacedName(c.in, c.def)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: want %q, got %v", c.in, c.err, err)
			}
			continue
		}
		if err != nil || ns != c.ns || name != c.name {
			t.Errorf("%q: got %q %q %v", c.in, ns, name, err)
		}
	}
}

// Cluster names are label values unchanged; names that are not are
// rejected, never converted (ünï and n must not share VMs).
func TestGuestClusterValue(t *testing.T) {
	for _, ok := range []string{"", "c1", "Guest_A.1", strings.Repeat("a", 63), "c-m-7x2kq"} {
		if v, err := GuestClusterValue(ok); err != nil || v != ok {
			t.Errorf("GuestClusterValue(%q) = %q, %v; want it unchanged", ok, v, err)
		}
	}
	for _, bad := range []string{"ünï", "-a", "a b", "a\nb", `a"b`, strings.Repeat("a", 64), strings.Repeat("x", 300)} {
		_, err := GuestClusterValue(bad)
		if err == nil || !strings.Contains(err.Error(), "not a valid label value") || !strings.Contains(err.Error(), "63") {
			t.Errorf("GuestClusterValue(%q) = %v; want a label-value error naming the limit", bad, err)
		}
		if l := MachineLabels("default", "c1-pool1-x7k2p", bad); l[LabelGuestCluster] != "" || l[LabelNodePool] != "" {
			t.Errorf("MachineLabels with cluster %q converted it: %v", bad, l)
		}
	}
}
