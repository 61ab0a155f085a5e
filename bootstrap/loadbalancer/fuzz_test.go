package loadbalancer

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/internal/field"
)

// FuzzIPRanges: ranges are parsed into ordered, non-overlapping ranges or
// rejected naming the range field; accepted ranges build an IPPool that
// reads back with the same ranges.
func FuzzIPRanges(f *testing.F) {
	for _, s := range [][2]string{{"192.168.0.0/24", "10.0.0.0/8@10.0.0.10-10.0.0.20"}, {"10.0.0.1-10.0.0.2", "10.0.0.2-10.0.0.3"},
		{"fd00::/64@fd00::1-fd00::9", "192.168.0.0/24"}, {"10.0.0.0/33", "x"}, {"10.0.0.5-10.0.0.1", "::1-10.0.0.1"}, {"1.2.3.4/32", "0.0.0.0/0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ranges, err := ParseIPRanges([]string{a, b}, nil)
		if err != nil {
			for _, fl := range field.Fields(err) {
				if fl != FieldRange {
					t.Fatalf("problem not naming the range field: %v", err)
				}
			}
			return
		}
		for _, r := range ranges {
			if r.End.Less(r.Start) {
				t.Fatalf("%q: end before start", r.Source)
			}
		}
		if ranges[0].overlaps(ranges[1]) {
			t.Fatalf("overlapping ranges accepted: %q %q", a, b)
		}
		out, err := BuildIPPool(PoolSpec{Name: "p", Ranges: ranges})
		if err != nil {
			for _, fl := range field.Fields(err) {
				if fl != FieldRange {
					t.Fatalf("problem not naming the range field: %v", err)
				}
			}
			return
		}
		var pool IPPool
		if err := yaml.Unmarshal(out, &pool); err != nil || len(pool.Spec.Ranges) != 2 {
			t.Fatalf("IPPool does not read back: %v\n%s", err, out)
		}
	})
}

// FuzzPoolScope: scope values are "*", empty or valid names, else rejected
// naming their field; accepted values read back unchanged.
func FuzzPoolScope(f *testing.F) {
	for _, s := range [][3]string{{"*", "*", "*"}, {"c-m-abc:p-xyz", "default", "guest-a"}, {"a:b:c", "Bad NS", "ünï"}, {"", "x\ny", "'quoted'"}} {
		f.Add(s[0], s[1], s[2])
	}
	ranges, err := ParseIPRanges([]string{"10.0.0.0/24"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, project, namespace, cluster string) {
		out, err := BuildIPPool(PoolSpec{Name: "p", Ranges: ranges, Project: project, Namespace: namespace, GuestCluster: cluster})
		if err != nil {
			for _, fl := range field.Fields(err) {
				if fl != FieldScopeProject && fl != FieldScopeNamespace && fl != FieldScopeCluster {
					t.Fatalf("problem not naming a scope field: %v", err)
				}
			}
			return
		}
		var pool IPPool
		if err := yaml.Unmarshal(out, &pool); err != nil {
			t.Fatalf("IPPool does not parse: %v\n%s", err, out)
		}
		if project == "" && namespace == "" && cluster == "" {
			return
		}
		sc := pool.Spec.Selector.Scope
		if len(sc) != 1 || sc[0].Project != orAny(project) || sc[0].Namespace != orAny(namespace) || sc[0].GuestCluster != orAny(cluster) {
			t.Fatalf("scope does not read back: %+v", sc)
		}
	})
}

// FuzzLoadBalancerAnnotations: every problem names its annotation (or the
// Service type); accepted values are the effective ones.
func FuzzLoadBalancerAnnotations(f *testing.F) {
	for _, s := range [][3]string{{AnnIPAM, "dhcp", "LoadBalancer"}, {AnnNetwork, "default/vlan1", ""}, {AnnHealthCheckPort, "99999", "ClusterIP"},
		{AnnPrimaryService, "Bad_Name", "LoadBalancer"}, {AnnotationPrefix + "unknown", "x", ""}, {AnnHealthCheckPeriod, "-1", ""}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, key, value, svcType string) {
		res, err := CheckLoadBalancer(svcType, map[string]string{key: value})
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if line != "" && !strings.HasPrefix(line, "annotation ") && !strings.HasPrefix(line, "spec.type ") {
					t.Fatalf("problem names neither an annotation nor the type: %q", line)
				}
			}
			return
		}
		if v, ok := res.Effective[key]; ok && v != value {
			t.Fatalf("effective %s=%q, given %q", key, v, value)
		}
	})
}
