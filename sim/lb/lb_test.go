package lb

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

func pool(name string, ranges []lbapi.Range, sel lbapi.Selector) lbapi.IPPool {
	return lbapi.IPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: lbapi.IPPoolSpec{Ranges: ranges, Selector: sel}}
}

func TestAllocate(t *testing.T) {
	tests := []struct {
		name      string
		ranges    []lbapi.Range
		status    lbapi.IPPoolStatus
		owner     string
		exhausted bool
		want      lbapi.AllocatedAddress
		err       string
	}{
		{"defaults skip network and gateway", []lbapi.Range{{Subnet: "192.168.1.0/24"}}, lbapi.IPPoolStatus{}, "ns/a",
			false, lbapi.AllocatedAddress{IPPool: "p", IP: "192.168.1.2", Mask: "255.255.255.0", Gateway: "192.168.1.1"}, ""},
		{"round robin after lastAllocated", []lbapi.Range{{Subnet: "192.168.1.0/24"}}, lbapi.IPPoolStatus{LastAllocated: "192.168.1.7"}, "ns/a",
			false, lbapi.AllocatedAddress{IPPool: "p", IP: "192.168.1.8", Mask: "255.255.255.0", Gateway: "192.168.1.1"}, ""},
		{"wraps and skips allocated", []lbapi.Range{{Subnet: "10.0.0.0/29", RangeStart: "10.0.0.4", RangeEnd: "10.0.0.6"}},
			lbapi.IPPoolStatus{LastAllocated: "10.0.0.6", Allocated: map[string]string{"10.0.0.4": "ns/x"}}, "ns/a",
			false, lbapi.AllocatedAddress{IPPool: "p", IP: "10.0.0.5", Mask: "255.255.255.248", Gateway: "10.0.0.1"}, ""},
		{"explicit gateway inside range is skipped", []lbapi.Range{{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.10", RangeEnd: "10.0.0.12", Gateway: "10.0.0.10"}},
			lbapi.IPPoolStatus{}, "ns/a", false, lbapi.AllocatedAddress{IPPool: "p", IP: "10.0.0.11", Mask: "255.255.255.0", Gateway: "10.0.0.10"}, ""},
		{"second range", []lbapi.Range{{Subnet: "10.0.0.0/30"}, {Subnet: "10.0.1.0/30"}},
			lbapi.IPPoolStatus{Allocated: map[string]string{"10.0.0.2": "ns/x"}}, "ns/a",
			false, lbapi.AllocatedAddress{IPPool: "p", IP: "10.0.1.2", Mask: "255.255.255.252", Gateway: "10.0.1.1"}, ""},
		{"/32 is one address", []lbapi.Range{{Subnet: "10.9.9.9/32"}}, lbapi.IPPoolStatus{}, "ns/a",
			false, lbapi.AllocatedAddress{IPPool: "p", IP: "10.9.9.9", Mask: "255.255.255.255"}, ""},
		{"history reused", []lbapi.Range{{Subnet: "192.168.1.0/24"}},
			lbapi.IPPoolStatus{LastAllocated: "192.168.1.50", AllocatedHistory: map[string]string{"192.168.1.20": "ns/a", "192.168.1.30": "ns/b"}}, "ns/a",
			false, lbapi.AllocatedAddress{IPPool: "p", IP: "192.168.1.20", Mask: "255.255.255.0", Gateway: "192.168.1.1"}, ""},
		{"history address taken meanwhile", []lbapi.Range{{Subnet: "192.168.1.0/24"}},
			lbapi.IPPoolStatus{Allocated: map[string]string{"192.168.1.20": "ns/b"}, AllocatedHistory: map[string]string{"192.168.1.20": "ns/a"}}, "ns/a",
			false, lbapi.AllocatedAddress{IPPool: "p", IP: "192.168.1.2", Mask: "255.255.255.0", Gateway: "192.168.1.1"}, ""},
		{"already held", []lbapi.Range{{Subnet: "192.168.1.0/24"}}, lbapi.IPPoolStatus{Allocated: map[string]string{"192.168.1.9": "ns/a"}}, "ns/a",
			true, lbapi.AllocatedAddress{IPPool: "p", IP: "192.168.1.9", Mask: "255.255.255.0", Gateway: "192.168.1.1"}, ""},
		{"exhausted", []lbapi.Range{{Subnet: "10.0.0.0/30"}}, lbapi.IPPoolStatus{Allocated: map[string]string{"10.0.0.2": "ns/x"}}, "ns/a",
			false, lbapi.AllocatedAddress{}, "no IP addresses available in range set: 10.0.0.1-10.0.0.2"},
		{"exhausted by fault", []lbapi.Range{{Subnet: "10.0.0.0/24", RangeStart: "10.0.0.10", RangeEnd: "10.0.0.20"}}, lbapi.IPPoolStatus{}, "ns/a",
			true, lbapi.AllocatedAddress{}, "no IP addresses available in range set: 10.0.0.10-10.0.0.20"},
		{"bad subnet", []lbapi.Range{{Subnet: "nope"}}, lbapi.IPPoolStatus{}, "ns/a", false, lbapi.AllocatedAddress{}, `spec.ranges[0]: subnet "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pool("p", tc.ranges, lbapi.Selector{})
			p.Status = tc.status
			got, err := Allocate(&p, tc.owner, tc.exhausted)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
			if p.Status.Allocated[got.IP] != tc.owner || p.Status.LastAllocated != got.IP && tc.status.Allocated[got.IP] == "" {
				t.Fatalf("status not updated: %+v", p.Status)
			}
			if _, inHistory := p.Status.AllocatedHistory[got.IP]; inHistory {
				t.Fatalf("allocated address still in history: %+v", p.Status)
			}
		})
	}
}

func TestCountsAndRelease(t *testing.T) {
	p := pool("p", []lbapi.Range{{Subnet: "10.0.0.0/29"}, {Subnet: "10.0.1.5/32"}}, lbapi.Selector{})
	if err := Counts(&p, false); err != nil || p.Status.Total != 6 || p.Status.Available != 6 {
		t.Fatalf("counts: %+v %v (want 5 of the /29 without network, gateway, broadcast... plus the /32)", p.Status, err)
	}
	a, err := Allocate(&p, "ns/a", false)
	if err != nil || p.Status.Available != 5 {
		t.Fatalf("allocate: %+v %v", p.Status, err)
	}
	if !Release(&p, "ns/a") || p.Status.Available != 6 || p.Status.Allocated[a.IP] != "" || p.Status.AllocatedHistory[a.IP] != "ns/a" {
		t.Fatalf("release: %+v", p.Status)
	}
	if Release(&p, "ns/a") {
		t.Fatal("second release changed the pool")
	}
	b, _ := Allocate(&p, "ns/b", false)
	if b.IP == a.IP {
		t.Fatalf("round robin handed out the released address %s again at once", a.IP)
	}
	again, _ := Allocate(&p, "ns/a", false)
	if again.IP != a.IP {
		t.Fatalf("ns/a got %s, want its earlier %s", again.IP, a.IP)
	}
	if err := Counts(&p, true); err != nil || p.Status.Available != 0 {
		t.Fatalf("exhausted counts: %+v", p.Status)
	}
}

func TestSelectsBackend(t *testing.T) {
	labels := map[string]string{"app": "web", "tier": "front"}
	for _, tc := range []struct {
		name string
		sel  map[string][]string
		want bool
	}{
		{"empty selects nothing", nil, false},
		{"one value", map[string][]string{"app": {"web"}}, true},
		{"one of values", map[string][]string{"app": {"db", "web"}}, true},
		{"all keys needed", map[string][]string{"app": {"web"}, "zone": {"a"}}, false},
		{"value differs", map[string][]string{"tier": {"back"}}, false},
		{"key only", map[string][]string{"tier": nil}, true},
	} {
		if got := SelectsBackend(tc.sel, labels); got != tc.want {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}
