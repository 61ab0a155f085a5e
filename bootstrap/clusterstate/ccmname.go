package clusterstate

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
	ccmNameMax   = 63
	ccmSuffixLen = 8
	ccmPrefixMax = ccmNameMax - ccmSuffixLen
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

// legacyRule is loadBalancerName of a release before v0.1.5 (read in each
// tag's pkg/cloud-controller-manager/loadBalancer.go): no "a" for a cluster
// name that is not a DNS-1035 label, the checksum appended first and then
// the WHOLE name cut (so a long prefix can cut into or off the checksum).
type legacyRule struct {
	since  string // first release with this rule
	format string // how the checksum is printed
	max    int    // the whole name's cut
}

// legacyRules, newest first: v0.1.3-v0.1.4 print %08x and cut to 63;
// v0.1.2 prints %8x (padded with spaces) and cuts to 63; v0.1.0-v0.1.1
// print %8x and cut to 253.
var legacyRules = []legacyRule{
	{since: "v0.1.3", format: "%08x", max: 63},
	{since: "v0.1.2", format: "%8x", max: 63},
	{since: "v0.1.0", format: "%8x", max: 253},
}

func (r legacyRule) name(cluster, svcNamespace, svcName, svcUID string) string {
	name := cluster + "-" + svcNamespace + "-" + svcName + "-"
	return cut(name+fmt.Sprintf(r.format, crc32.ChecksumIEEE([]byte(name+svcUID))), r.max)
}

// legacyRuleOf is the rule of a release tag before v0.1.5, false for a
// later release or a tag that is not a version (a branch build follows the
// newest rule).
func legacyRuleOf(tag string) (legacyRule, bool) {
	v, err := version.ParseGeneric(tag)
	if err != nil || v.AtLeast(version.MustParseGeneric(ccmNameRuleSince)) {
		return legacyRule{}, false
	}
	for _, r := range legacyRules {
		if v.AtLeast(version.MustParseGeneric(r.since)) {
			return r, true
		}
	}
	return legacyRules[len(legacyRules)-1], true
}

// CloudProviderNameFor is the LoadBalancer name harvester-cloud-provider
// release tag gives.
func CloudProviderNameFor(tag, cluster, svcNamespace, svcName, svcUID string) string {
	if r, ok := legacyRuleOf(tag); ok {
		return r.name(cluster, svcNamespace, svcName, svcUID)
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
	if name == CloudProviderName(cluster, svcNamespace, svcName, svcUID) {
		return OwnerThisUID
	}
	for _, r := range legacyRules {
		if name == r.name(cluster, svcNamespace, svcName, svcUID) {
			return OwnerThisUID
		}
	}
	prefix := cut(ccmBase(cluster, svcNamespace, svcName), ccmPrefixMax)
	if rest, ok := strings.CutPrefix(name, prefix); ok && isHex(rest, "0123456789abcdef") {
		return OwnerOtherUID
	}
	// A legacy name proves another UID only while its whole checksum fits.
	legacy := cluster + "-" + svcNamespace + "-" + svcName + "-"
	for _, r := range legacyRules {
		if rest, ok := strings.CutPrefix(name, legacy); ok && len(legacy)+ccmSuffixLen <= r.max && isHex(rest, " 0123456789abcdef") {
			return OwnerOtherUID
		}
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
