package lbapi

import (
	"fmt"
	"hash/crc32"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ccmNamePrefixMax is how much of "<cluster>-<ns>-<svc>-" the cloud
// provider keeps: 63 characters minus the 8 hex digits of the checksum.
const ccmNamePrefixMax = 55

// CloudProviderName is the name the Harvester cloud provider gives the
// LoadBalancer of a guest Service (its loadBalancerName): the prefix
// "<cluster>-<svcNamespace>-<svcName>-", with an "a" in front when the
// cluster name is not a DNS-1035 label, cut to 55 characters, plus 8 hex
// digits of crc32 (IEEE) of the prefix and the Service's UID. A Service
// re-created under the same name gets another LoadBalancer name.
func CloudProviderName(cluster, svcNamespace, svcName, svcUID string) string {
	prefix := cluster + "-" + svcNamespace + "-" + svcName + "-"
	if len(validation.IsDNS1035Label(cluster)) > 0 {
		prefix = "a" + prefix
	}
	if len(prefix) > ccmNamePrefixMax {
		prefix = prefix[:ccmNamePrefixMax]
	}
	return prefix + fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(prefix+svcUID)))
}
