package loadbalancer

import (
	"strings"
	"testing"

	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
)

var (
	golden = goldenfile.Assert
)

func TestParseIPRange(t *testing.T) {
	cases := []struct {
		in, start, end, err string
		cidr                bool
	}{
		{in: "192.168.0.0/24", start: "192.168.0.0", end: "192.168.0.255", cidr: true},
		{in: "192.168.0.7/29", start: "192.168.0.0", end: "192.168.0.7", cidr: true},
		{in: "192.168.0.0/24@192.168.0.10-192.168.0.20", start: "192.168.0.10", end: "192.168.0.20"},
		{in: "10.0.0.5-10.0.0.9", start: "10.0.0.5", end: "10.0.0.9"},
		{in: "fd00::/120", start: "fd00::", end: "fd00::ff", cidr: true},
		{in: "192.168.0.0/33", err: "not a CIDR"},
		{in: "garbage", err: "not a CIDR"},
		{in: "10.0.0.9-10.0.0.5", err: "is after end"},
		{in: "10.0.0.1-fd00::1", err: "mix IPv4 and IPv6"},
		{in: "10.0.0.1-", err: "not a range"},
		{in: "192.168.0.0/24@192.168.1.1-192.168.1.2", err: "not inside subnet"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			r, err := ParseIPRange(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want %q, got %v", c.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Start.String() != c.start || r.End.String() != c.end || r.IsCIDR() != c.cidr {
				t.Errorf("got %s-%s cidr=%v", r.Start, r.End, r.IsCIDR())
			}
		})
	}
}

func TestParseIPRangesOverlaps(t *testing.T) {
	existing, err := ExistingRanges([]map[string]any{
		{"kind": "IPPool", "metadata": map[string]any{"name": "old"}, "spec": map[string]any{"ranges": []any{
			map[string]any{"subnet": "10.1.0.0/24", "rangeStart": "10.1.0.100", "rangeEnd": "10.1.0.110"}}}},
		{"kind": "ConfigMap", "metadata": map[string]any{"name": "kubevip"}, "data": map[string]any{"cidr-default": "10.2.0.0/29", "range-global": "10.3.0.1-10.3.0.5, 10.3.0.9-10.3.0.9", "other": "x"}},
	})
	if err != nil || len(existing) != 4 {
		t.Fatalf("existing %v %v", existing, err)
	}
	cases := []struct {
		name string
		in   []string
		errs []string
	}{
		{name: "disjoint", in: []string{"10.0.0.0/29", "10.0.0.8/29", "10.1.0.111-10.1.0.120"}},
		{name: "none", errs: []string{"at least one"}},
		{name: "self overlap", in: []string{"10.0.0.0/24", "10.0.0.128/25"}, errs: []string{"range \"10.0.0.128/25\": overlaps \"10.0.0.0/24\""}},
		{name: "edge overlap", in: []string{"10.0.0.1-10.0.0.5", "10.0.0.5-10.0.0.6"}, errs: []string{"overlaps"}},
		{name: "existing pool", in: []string{"10.1.0.0/24@10.1.0.110-10.1.0.120"}, errs: []string{"overlaps existing IPPool/old"}},
		{name: "existing kubevip cidr", in: []string{"10.2.0.4-10.2.0.4"}, errs: []string{"existing ConfigMap/kubevip cidr-default"}},
		{name: "existing kubevip range", in: []string{"10.3.0.9/32"}, errs: []string{"range-global"}},
		{name: "bad and overlapping reported together", in: []string{"x", "10.0.0.0/24", "10.0.0.0/24"}, errs: []string{"not a CIDR", "overlaps"}},
		{name: "v4 and v6 never overlap", in: []string{"10.9.0.0/16", "::/0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseIPRanges(c.in, existing)
			if len(c.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, w := range c.errs {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("want %q in %v", w, err)
				}
			}
		})
	}
	if _, err := ExistingRanges([]map[string]any{{"kind": "ConfigMap", "metadata": map[string]any{"name": "kubevip"}, "data": map[string]any{"cidr-x": "nope"}}}); err == nil {
		t.Error("bad existing range accepted")
	}
}

func TestIPPoolGolden(t *testing.T) {
	ranges := goldenfile.Must(ParseIPRanges([]string{"192.168.10.0/24@192.168.10.100-192.168.10.150", "192.168.20.0/28"}, nil))
	golden(t, "ippool.yaml", goldenfile.Must(BuildIPPool(PoolSpec{Name: "guest-a-pool", Ranges: ranges, Network: "default/vlan1", Priority: 10, Namespace: "default", GuestCluster: "guest-a"})))
	golden(t, "ippool-minimal.yaml", goldenfile.Must(BuildIPPool(PoolSpec{Name: "p", Ranges: ranges[1:]})))
	kv := goldenfile.Must(ParseIPRanges([]string{"192.168.0.200/29", "192.168.0.210/29", "192.168.0.230-192.168.0.235"}, nil))
	golden(t, "kubevip.yaml", goldenfile.Must(BuildKubeVIPConfigMap("default", kv)))
	golden(t, "kubevip-global.yaml", goldenfile.Must(BuildKubeVIPConfigMap("", kv[:1])))

	bare := goldenfile.Must(ParseIPRanges([]string{"10.0.0.1-10.0.0.2"}, nil))
	_, err := BuildIPPool(PoolSpec{Name: "Bad_Name", Ranges: bare, Network: "vlan"})
	for _, w := range []string{"pool name \"Bad_Name\"", "needs its subnet", "network: \"vlan\" is not <namespace>/<name>"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("want %q in %v", w, err)
		}
	}
	if _, err := BuildKubeVIPConfigMap("Bad", kv); err == nil {
		t.Error("bad scope accepted")
	}
}
