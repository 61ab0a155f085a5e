package lbapi

import (
	"fmt"
	"hash/crc32"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/version"
)

// Lengths in the cloud provider's loadBalancerName (v0.1.5 and later): a
// name of at most 63 characters ending in 8 hex digits of a checksum.
const (
	ccmNameMax    = 63
	ccmSuffixLen  = 8
	ccmPrefixMax  = ccmNameMax - ccmSuffixLen
	legacyNameMax = 253
)

// ccmNameRuleSince is the first harvester-cloud-provider release whose
// loadBalancerName is CloudProviderName's rule (the DNS-1035 fix-up, 63
// characters); the rule is unchanged from it through v0.2.7 (read in each
// tag's pkg/cloud-controller-manager/loadbalancer.go).
const ccmNameRuleSince = "v0.1.5"

// ccmBase is "<cluster>-<svcNamespace>-<svcName>-" with an "a" in front
// when the cluster name is not a DNS-1035 label, before any cut.
func ccmBase(cluster, svcNamespace, svcName string) string {
	base := cluster + "-" + svcNamespace + "-" + svcName + "-"
	if len(validation.IsDNS1035Label(cluster)) > 0 {
		base = "a" + base
	}
	return base
}

// CloudProviderName is the name the Harvester cloud provider (v0.1.5 to
// v0.2.7, every release the bootstrap pins) gives the LoadBalancer of a
// guest Service (its loadBalancerName): crc32 (IEEE) is taken of the WHOLE
// prefix "<cluster>-<svcNamespace>-<svcName>-" (an "a" in front when the
// cluster name is not a DNS-1035 label) followed by the Service's UID; only
// then is the prefix cut to 55 characters, and the 8 hex digits of the
// checksum follow it. A Service re-created under the same name gets another
// LoadBalancer name.
func CloudProviderName(cluster, svcNamespace, svcName, svcUID string) string {
	base := ccmBase(cluster, svcNamespace, svcName)
	sum := crc32.ChecksumIEEE([]byte(base + svcUID))
	return cut(base, ccmPrefixMax) + fmt.Sprintf("%08x", sum)
}

// LegacyCloudProviderName is loadBalancerName of harvester-cloud-provider
// v0.1.0 to v0.1.4: no "a" for a cluster name that is not a DNS-1035 label,
// the checksum printed with %8x (padded with spaces, not zeros) and the
// whole name cut to 253 characters.
func LegacyCloudProviderName(cluster, svcNamespace, svcName, svcUID string) string {
	name := cluster + "-" + svcNamespace + "-" + svcName + "-"
	name += fmt.Sprintf("%8x", crc32.ChecksumIEEE([]byte(name+svcUID)))
	return cut(name, legacyNameMax)
}

// CloudProviderNameFor is the LoadBalancer name harvester-cloud-provider
// release tag gives; a tag that is not a version (a branch build) follows
// the newest rule.
func CloudProviderNameFor(tag, cluster, svcNamespace, svcName, svcUID string) string {
	if v, err := version.ParseGeneric(tag); err == nil && !v.AtLeast(version.MustParseGeneric(ccmNameRuleSince)) {
		return LegacyCloudProviderName(cluster, svcNamespace, svcName, svcUID)
	}
	return CloudProviderName(cluster, svcNamespace, svcName, svcUID)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Owner says whose LoadBalancer a name is, as far as the cloud provider's
// naming rules can tell.
type Owner int

const (
	// OwnerUnknown: the name has the form of no rule's name for this
	// Service; it cannot be shown to belong to another UID.
	OwnerUnknown Owner = iota
	// OwnerThisUID: some release's rule gives exactly this name for the
	// Service's UID.
	OwnerThisUID
	// OwnerOtherUID: the name is some rule's prefix for this Service
	// followed by a checksum that is not the one of this UID, so it was
	// derived from another UID (a Service re-created under the same name).
	OwnerOtherUID
)

// NameOwner judges LoadBalancer name against the Service
// svcNamespace/svcName with UID svcUID of cluster, under every release's
// rule.
func NameOwner(name, cluster, svcNamespace, svcName, svcUID string) Owner {
	if name == CloudProviderName(cluster, svcNamespace, svcName, svcUID) ||
		name == LegacyCloudProviderName(cluster, svcNamespace, svcName, svcUID) {
		return OwnerThisUID
	}
	prefix := cut(ccmBase(cluster, svcNamespace, svcName), ccmPrefixMax)
	if rest, ok := strings.CutPrefix(name, prefix); ok && isHex(rest, "0123456789abcdef") {
		return OwnerOtherUID
	}
	legacy := cluster + "-" + svcNamespace + "-" + svcName + "-"
	if rest, ok := strings.CutPrefix(name, legacy); ok && len(legacy)+ccmSuffixLen <= legacyNameMax && isHex(rest, " 0123456789abcdef") {
		return OwnerOtherUID
	}
	return OwnerUnknown
}

// isHex reports whether s is 8 characters of digits.
func isHex(s, digits string) bool {
	if len(s) != ccmSuffixLen {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune(digits, r) {
			return false
		}
	}
	return true
}
