package loadbalancer

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The longest valid names and every scope form come back from the IPPool
// exactly, with no key the builder did not write.
func TestIPPoolNamesRoundTrip(t *testing.T) {
	ranges, err := ParseIPRanges([]string{"10.0.0.0/24@10.0.0.10-10.0.0.20", "fd00::/120"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 59) + ".b" // with "G_": 63 characters
	cases := []PoolSpec{
		{Name: strings.Repeat("p", 253), Ranges: ranges, Network: strings.Repeat("n", 63) + "/" + strings.Repeat("v", 253), Priority: 4294967295,
			Project: strings.Repeat("c", 63) + ":" + strings.Repeat("p", 63), Namespace: strings.Repeat("s", 63), GuestCluster: "G_" + long},
		{Name: "p.q-r", Ranges: ranges, Project: "*", Namespace: "*", GuestCluster: "*"},
		{Name: "x", Ranges: ranges, GuestCluster: "yes"},
	}
	for _, p := range cases {
		out, err := BuildIPPool(p)
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		var strict IPPool
		dec := yaml.NewDecoder(strings.NewReader(string(out)))
		dec.KnownFields(true)
		if err := dec.Decode(&strict); err != nil {
			t.Fatalf("IPPool has keys the builder did not write, or does not parse: %v\n%s", err, out)
		}
		sel := strict.Spec.Selector
		if strict.Metadata.Name != p.Name || sel.Network != p.Network || uint64(sel.Priority) != p.Priority || len(strict.Spec.Ranges) != 2 {
			t.Errorf("pool changed: %+v", strict)
		}
		if len(sel.Scope) != 1 || sel.Scope[0] != (ipPoolScope{Project: orAny(p.Project), Namespace: orAny(p.Namespace), GuestCluster: orAny(p.GuestCluster)}) {
			t.Errorf("scope changed: %+v", sel.Scope)
		}
	}
}
