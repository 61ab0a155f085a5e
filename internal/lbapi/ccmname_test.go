package lbapi

import (
	"strings"
	"testing"
)

func TestCloudProviderName(t *testing.T) {
	got := CloudProviderName("guest-a", "default", "web", "uid-1")
	if !strings.HasPrefix(got, "guest-a-default-web-") || len(got) != len("guest-a-default-web-")+8 {
		t.Fatalf("name = %q", got)
	}
	if got == CloudProviderName("guest-a", "default", "web", "uid-2") {
		t.Fatal("the Service UID does not change the name")
	}
	long := CloudProviderName("c", "a-very-long-namespace-name-for-services", "and-a-long-service-name", "u")
	if len(long) != 63 {
		t.Fatalf("long name %q has %d characters, want 55+8", long, len(long))
	}
	if got := CloudProviderName("1abc", "ns", "svc", "u"); !strings.HasPrefix(got, "a1abc-ns-svc-") {
		t.Fatalf("non-DNS-1035 cluster: %q, want an a in front", got)
	}
	// crc32 (IEEE) of "guest-a-default-web-uid-1", computed independently (Python zlib.crc32).
	if got != "guest-a-default-web-0746d7ec" {
		t.Fatalf("name = %q", got)
	}
}
