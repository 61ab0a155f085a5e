package clusterstate

import (
	"strings"
	"testing"
)

// The expected names are literals worked out from the cloud provider's
// loadBalancerName (harvester-cloud-provider v0.2.7, unchanged since
// v0.1.5) with an independent crc32 (Python's zlib.crc32): the checksum is
// of the whole prefix plus the UID, and only then is the prefix cut to 55.
func TestCloudProviderName(t *testing.T) {
	const uid = "7c1a4e0d-0c1f-4d5e-9a8b-1f2e3d4c5b6a"
	tests := []struct {
		name, cluster, ns, svc, uid, want string
	}{
		{"short", "guest-a", "default", "web", "uid-1", "guest-a-default-web-0746d7ec"},
		{"prefix of 54", "rke2-prod", "default", strings.Repeat("s", 35), uid, "rke2-prod-default-sssssssssssssssssssssssssssssssssss-779a70c8"},
		{"prefix of 55", "rke2-prod", "default", strings.Repeat("s", 36), uid, "rke2-prod-default-ssssssssssssssssssssssssssssssssssss-6f3196dd"},
		{"prefix of 56", "rke2-prod", "default", strings.Repeat("s", 37), uid, "rke2-prod-default-sssssssssssssssssssssssssssssssssssss02f4d9d0"},
		{"prefix of 70", "rke2-prod", "default", strings.Repeat("s", 51), uid, "rke2-prod-default-sssssssssssssssssssssssssssssssssssssaf2d0d4d"},
		{"ingress-nginx (prefix of 60)", "rke2-prod-cluster-01", "ingress-nginx", "ingress-nginx-controller", "0f3d1a52-8b7e-4c33-a2d1-5e9f4b6c7d80",
			"rke2-prod-cluster-01-ingress-nginx-ingress-nginx-controf4071685"},
		{"issue 33's Service (prefix of 56)", "guest-a", "gapps", "frontend-web-application-public-https-api", "4b1c9e2a-6d3f-4e8a-b7c5-2a1d0f9e8c76",
			"guest-a-gapps-frontend-web-application-public-https-apib92d34f0"},
		{"cluster not a DNS-1035 label", "1st-cluster", "default", "web", "uid-1", "a1st-cluster-default-web-a22b4111"},
		{"cluster not a DNS-1035 label, prefix of 64 with the a", "1st-cluster", "kube-system", "a-service-with-a-rather-long-name-here", "uid-2",
			"a1st-cluster-kube-system-a-service-with-a-rather-long-nf06cb081"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CloudProviderName(tc.cluster, tc.ns, tc.svc, tc.uid); got != tc.want {
				t.Errorf("CloudProviderName = %q, want %q", got, tc.want)
			}
			for _, tag := range []string{"v0.2.7", "v0.2.0", "v0.1.5", "main-head"} {
				if got := CloudProviderNameFor(tag, tc.cluster, tc.ns, tc.svc, tc.uid); got != tc.want {
					t.Errorf("CloudProviderNameFor(%s) = %q, want %q", tag, got, tc.want)
				}
			}
			if got := NameOwner(tc.want, tc.cluster, tc.ns, tc.svc, tc.uid); got != OwnerThisUID {
				t.Errorf("NameOwner(own name) = %v, want OwnerThisUID", got)
			}
			if got := NameOwner(tc.want, tc.cluster, tc.ns, tc.svc, tc.uid+"-recreated"); got != OwnerOtherUID {
				t.Errorf("NameOwner(name of the same Service, another UID) = %v, want OwnerOtherUID", got)
			}
		})
	}
}

// Releases before v0.1.5: no "a", the checksum appended, then the whole
// name cut: v0.1.0-v0.1.1 %8x (spaces) and 253; v0.1.2 %8x and 63;
// v0.1.3-v0.1.4 %08x and 63 (read in each tag's loadBalancer.go). Literals
// from Python's zlib.crc32 with those formats, not from this package.
func TestLegacyCloudProviderName(t *testing.T) {
	const longNS, longSvc = "ingress-nginx", "ingress-nginx-controller"
	for _, tc := range []struct {
		tag, cluster, ns, svc, uid, want string
	}{
		{"v0.1.0", "1st-cluster", "default", "web", "uid-53", "1st-cluster-default-web- cd21e5b"},
		{"v0.1.1", "rke2-prod-cluster-01", longNS, longSvc, "uid-1", "rke2-prod-cluster-01-ingress-nginx-ingress-nginx-controller- 9ee06e9"},
		{"v0.1.2", "1st-cluster", "default", "web", "uid-53", "1st-cluster-default-web- cd21e5b"},
		{"v0.1.2", "rke2-prod-cluster-01", longNS, longSvc, "uid-1", "rke2-prod-cluster-01-ingress-nginx-ingress-nginx-controller- 9e"},
		{"v0.1.3", "1st-cluster", "default", "web", "uid-53", "1st-cluster-default-web-0cd21e5b"},
		{"v0.1.4", "rke2-prod-cluster-01", longNS, longSvc, "uid-1", "rke2-prod-cluster-01-ingress-nginx-ingress-nginx-controller-09e"},
	} {
		if got := CloudProviderNameFor(tc.tag, tc.cluster, tc.ns, tc.svc, tc.uid); got != tc.want {
			t.Errorf("CloudProviderNameFor(%s, %s/%s) = %q, want %q", tc.tag, tc.ns, tc.svc, got, tc.want)
		}
		if got := NameOwner(tc.want, tc.cluster, tc.ns, tc.svc, tc.uid); got != OwnerThisUID {
			t.Errorf("NameOwner(%q) = %v, want OwnerThisUID", tc.want, got)
		}
	}
}

func TestNameOwnerUnknown(t *testing.T) {
	for _, name := range []string{"hand-made", "guest-a-default-web-0746d7e", "guest-a-default-web-0746d7ecx", "guest-a-default-web-0746D7EC"} {
		if got := NameOwner(name, "guest-a", "default", "web", "uid-2"); got != OwnerUnknown {
			t.Errorf("NameOwner(%q) = %v, want OwnerUnknown", name, got)
		}
	}
}
