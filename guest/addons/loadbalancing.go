package addons

import (
	"errors"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/internal/field"
)

// The cloud provider's network flags (v0.2.7): which NIC's address becomes
// a node's address on multi-NIC VMs. Values are never quoted inside the
// argument (the CCM would read the quotes as part of the value).
const (
	CCMManagementNetworkFlag = "--management-network"
	CCMNodeIPCIDRFlag        = "--node-ip-cidr"
	CCMNodeExcludeRangesFlag = "--node-exclude-ip-ranges"
)

// LoadBalancing are the options of how a LoadBalancer Service's address
// reaches the guest's nodes: the cloud provider's network flags and the
// kube-vip settings. The zero value is Harvester's chart defaults.
type LoadBalancing struct {
	// VIPInterface is the interface kube-vip announces addresses on
	// ("" = kube-vip detects it).
	VIPInterface string
	// TrafficPolicyLocal supports Services with externalTrafficPolicy
	// Local: kube-vip on every node with per-Service election
	// (harvester#6944).
	TrafficPolicyLocal bool
	// ManagementNetwork is the <namespace>/<name> of the Harvester network
	// whose address becomes the node's address.
	ManagementNetwork string
	// NodeIPCIDR keeps node addresses to this CIDR.
	NodeIPCIDR string
	// NodeExcludeIPRanges are addresses or CIDRs never used as node addresses.
	NodeExcludeIPRanges []string
}

// Input fields of LoadBalancing, as problems name them.
const (
	FieldVIPInterface        = "kube-vip interface"
	FieldManagementNetwork   = "management network"
	FieldNodeIPCIDR          = "node IP CIDR"
	FieldNodeExcludeIPRanges = "node exclude IP ranges"
)

// CCMArgs are the cloud provider's flags for l, in a fixed order.
func (l LoadBalancing) CCMArgs() []string {
	var args []string
	if l.ManagementNetwork != "" {
		args = append(args, CCMManagementNetworkFlag+"="+l.ManagementNetwork)
	}
	if l.NodeIPCIDR != "" {
		args = append(args, CCMNodeIPCIDRFlag+"="+l.NodeIPCIDR)
	}
	if len(l.NodeExcludeIPRanges) > 0 {
		args = append(args, CCMNodeExcludeRangesFlag+"="+strings.Join(l.NodeExcludeIPRanges, ","))
	}
	return args
}

// IsZero reports whether l keeps every chart default.
func (l LoadBalancing) IsZero() bool {
	return l.VIPInterface == "" && !l.TrafficPolicyLocal && !l.hasNetworkFlags()
}

// hasNetworkFlags reports whether l needs the cloud provider's network flags.
func (l LoadBalancing) hasNetworkFlags() bool {
	return len(l.CCMArgs()) > 0
}

// Validate reports every problem with l at once.
func (l LoadBalancing) Validate() error {
	var errs []error
	if l.VIPInterface != "" && !validInterfaceName(l.VIPInterface) {
		errs = append(errs, field.Invalid(FieldVIPInterface, l.VIPInterface, "must be a network interface name: 1 to 15 characters, no '/', ':', quotes or whitespace (e.g. eth0, enp1s0)"))
	}
	if l.ManagementNetwork != "" {
		ns, name, ok := strings.Cut(l.ManagementNetwork, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			errs = append(errs, field.Invalid(FieldManagementNetwork, l.ManagementNetwork, "must be a Harvester network as <namespace>/<name>, e.g. default/vlan1"))
		}
	}
	if l.NodeIPCIDR != "" {
		if _, err := netip.ParsePrefix(l.NodeIPCIDR); err != nil {
			errs = append(errs, field.Invalid(FieldNodeIPCIDR, l.NodeIPCIDR, "must be a CIDR, e.g. 10.52.0.0/16"))
		}
	}
	for _, r := range l.NodeExcludeIPRanges {
		if !validAddressOrCIDR(r) {
			errs = append(errs, field.Invalid(FieldNodeExcludeIPRanges, r, "each entry must be an IP address or a CIDR, e.g. 10.52.0.1 or 10.52.1.0/24"))
		}
	}
	return errors.Join(errs...)
}

// validInterfaceName is Linux's rule for interface names (dev_valid_name),
// without the characters that would need quoting.
func validInterfaceName(s string) bool {
	if len(s) > 15 || s == "." || s == ".." {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r > '~' || strings.ContainsRune(`/:'"\`, r)
	})
}

func validAddressOrCIDR(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	_, err := netip.ParsePrefix(s)
	return err == nil
}
