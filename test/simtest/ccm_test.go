package simtest

import (
	"strings"
	"testing"
)

func TestCCMLoadBalancerName(t *testing.T) {
	got := CCMLoadBalancerName("guest-a", "default", "web", "uid-1")
	if !strings.HasPrefix(got, "guest-a-default-web-") || len(got) != len("guest-a-default-web-")+8 {
		t.Fatalf("name = %q", got)
	}
	if got == CCMLoadBalancerName("guest-a", "default", "web", "uid-2") {
		t.Fatal("the Service UID does not change the name")
	}
	long := CCMLoadBalancerName("c", "a-very-long-namespace-name-for-services", "and-a-long-service-name", "u")
	if len(long) != 63 {
		t.Fatalf("long name %q has %d characters, want 55+8", long, len(long))
	}
	if got := CCMLoadBalancerName("1abc", "ns", "svc", "u"); !strings.HasPrefix(got, "a1abc-ns-svc-") {
		t.Fatalf("non-DNS-1035 cluster: %q, want an a in front", got)
	}
}
