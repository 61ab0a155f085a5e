package loadbalancer

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"
)

// Input fields, as problems name them (a CLI renames them to its flags).
const (
	FieldRange          = "range"
	FieldPoolName       = "pool name"
	FieldNetwork        = "network"
	FieldScopeNamespace = "scope namespace"
	FieldScopeProject   = "scope project"
	FieldScopeCluster   = "scope guest cluster"
	FieldExisting       = "existing pools"
	FieldPriority       = "priority"
)

// IPRange is one address range: a subnet, optionally limited to Start-End.
// Subnet is invalid (zero) for a bare "START-END" range.
type IPRange struct {
	Subnet     netip.Prefix
	Start, End netip.Addr
	Source     string // as written by the user
}

// ParseIPRange accepts CIDR ("192.168.0.0/24"), CIDR with a range
// ("192.168.0.0/24@192.168.0.10-192.168.0.20") or a bare range
// ("192.168.0.10-192.168.0.20").
func ParseIPRange(s string) (IPRange, error) {
	r := IPRange{Source: s}
	cidr, rng, hasRange := strings.Cut(s, "@")
	if !hasRange && strings.Contains(s, "-") {
		cidr, rng, hasRange = "", s, true
	}
	if cidr != "" {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return r, fmt.Errorf("%q is not a CIDR like 192.168.0.0/24", cidr)
		}
		r.Subnet = p.Masked()
		r.Start, r.End = prefixBounds(r.Subnet)
	}
	if hasRange {
		a, b, ok := strings.Cut(rng, "-")
		start, err1 := netip.ParseAddr(strings.TrimSpace(a))
		end, err2 := netip.ParseAddr(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil {
			return r, fmt.Errorf("%q is not a range like 192.168.0.10-192.168.0.20", rng)
		}
		if start.Is4() != end.Is4() {
			return r, errors.New("start and end mix IPv4 and IPv6")
		}
		if end.Less(start) {
			return r, fmt.Errorf("start %s is after end %s", start, end)
		}
		if r.Subnet.IsValid() && (!r.Subnet.Contains(start) || !r.Subnet.Contains(end)) {
			return r, fmt.Errorf("range %s-%s is not inside subnet %s", start, end, r.Subnet)
		}
		r.Start, r.End = start, end
	}
	return r, nil
}

func prefixBounds(p netip.Prefix) (netip.Addr, netip.Addr) {
	lo := p.Addr()
	b := lo.AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	hi, _ := netip.AddrFromSlice(b)
	return lo, hi
}

func (r IPRange) overlaps(o IPRange) bool {
	if r.Start.Is4() != o.Start.Is4() {
		return false
	}
	return !r.End.Less(o.Start) && !o.End.Less(r.Start)
}

// IsCIDR reports whether the range is a whole subnet.
func (r IPRange) IsCIDR() bool {
	if !r.Subnet.IsValid() {
		return false
	}
	lo, hi := prefixBounds(r.Subnet)
	return r.Start == lo && r.End == hi
}

// ParseIPRanges parses every value and rejects overlaps among them and
// with existing; all problems are returned at once.
func ParseIPRanges(values []string, existing []IPRange) ([]IPRange, error) {
	var errs []error
	var out []IPRange
	if len(values) == 0 {
		errs = append(errs, field.Problem(FieldRange, "at least one CIDR or range is required"))
	}
	for _, v := range values {
		r, err := ParseIPRange(v)
		if err != nil {
			errs = append(errs, field.Invalid(FieldRange, v, "%v", err))
			continue
		}
		for _, prev := range out {
			if r.overlaps(prev) {
				errs = append(errs, field.Invalid(FieldRange, r.Source, "overlaps %q", prev.Source))
			}
		}
		for _, ex := range existing {
			if r.overlaps(ex) {
				errs = append(errs, field.Invalid(FieldRange, r.Source, "overlaps existing %s", ex.Source))
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// PoolSpec describes a Harvester IPPool.
type PoolSpec struct {
	Name         string
	Ranges       []IPRange
	Network      string // ns/name, optional
	Priority     uint64 // as given; the IPPool holds a uint32 (Validate)
	Project      string
	Namespace    string
	GuestCluster string
}

// IPPool mirrors loadbalancer.harvesterhci.io/v1beta1 IPPool.
type IPPool struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   ipPoolMetadata `yaml:"metadata"`
	Spec       ipPoolSpec     `yaml:"spec"`
}

type ipPoolMetadata struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

type ipPoolSpec struct {
	Ranges   []ipPoolRange  `yaml:"ranges"`
	Selector ipPoolSelector `yaml:"selector,omitempty"`
}

type ipPoolRange struct {
	Subnet     string `yaml:"subnet"`
	RangeStart string `yaml:"rangeStart,omitempty"`
	RangeEnd   string `yaml:"rangeEnd,omitempty"`
}

type ipPoolSelector struct {
	Network  string        `yaml:"network,omitempty"`
	Priority uint32        `yaml:"priority,omitempty"`
	Scope    []ipPoolScope `yaml:"scope,omitempty"`
}

type ipPoolScope struct {
	Project      string `yaml:"project,omitempty"`
	Namespace    string `yaml:"namespace,omitempty"`
	GuestCluster string `yaml:"guestCluster,omitempty"`
}

// Validate reports every problem of the pool spec.
func (p PoolSpec) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(p.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(FieldPoolName, p.Name, "must be a DNS-1123 subdomain (lower-case letters, digits, '-', '.')"))
	}
	for _, r := range p.Ranges {
		if !r.Subnet.IsValid() {
			errs = append(errs, field.Invalid(FieldRange, r.Source, "an IPPool range needs its subnet, e.g. 192.168.0.0/24@192.168.0.10-192.168.0.20"))
		}
	}
	if p.Network != "" {
		if _, _, err := harvester.SplitNamespacedName(p.Network, ""); err != nil {
			errs = append(errs, field.Problem(FieldNetwork, "%v", err))
		}
	}
	if p.Priority > math.MaxUint32 {
		errs = append(errs, field.Invalid(FieldPriority, strconv.FormatUint(p.Priority, 10), "must be at most %d (the IPPool's priority is a 32-bit number)", uint32(math.MaxUint32)))
	}
	errs = append(errs, validateScope(p)...)
	return errors.Join(errs...)
}

// validateScope checks the scope fields: each is empty (any), "*" (any)
// or a name the LoadBalancer requirement could carry.
func validateScope(p PoolSpec) []error {
	var errs []error
	if v := p.Project; v != "" && v != anyScope && !isProjectName(v) {
		errs = append(errs, field.Invalid(FieldScopeProject, v, "must be %q or a Rancher project ID (p-xxxxx or <cluster-id>:p-xxxxx, DNS-1123 labels)", anyScope))
	}
	if v := p.Namespace; v != "" && v != anyScope && len(validation.IsDNS1123Label(v)) > 0 {
		errs = append(errs, field.Invalid(FieldScopeNamespace, v, "must be %q or a namespace name (DNS-1123 label: lower-case letters, digits, '-', at most 63 characters)", anyScope))
	}
	if v := p.GuestCluster; v != "" && v != anyScope {
		if _, err := harvester.GuestClusterValue(v); err != nil {
			errs = append(errs, field.Invalid(FieldScopeCluster, v, "must be %q or a guest cluster name (a valid label value: at most 63 characters, letters, digits, '-', '_', '.')", anyScope))
		}
	}
	return errs
}

// isProjectName reports whether v is a Rancher project ID: "p-xxxxx" or
// "<cluster-id>:p-xxxxx".
func isProjectName(v string) bool {
	parts := strings.Split(v, ":")
	if len(parts) > 2 {
		return false
	}
	for _, part := range parts {
		if len(validation.IsDNS1123Label(part)) > 0 {
			return false
		}
	}
	return true
}

// BuildIPPool renders the IPPool YAML.
func BuildIPPool(p PoolSpec) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("build ip pool: %w", err)
	}
	pool := IPPool{APIVersion: "loadbalancer.harvesterhci.io/v1beta1", Kind: "IPPool",
		Metadata: ipPoolMetadata{Name: p.Name, Labels: map[string]string{addons.LabelManagedBy: addons.ManagedBy}}}
	for _, r := range p.Ranges {
		pr := ipPoolRange{Subnet: r.Subnet.String()}
		if !r.IsCIDR() {
			pr.RangeStart, pr.RangeEnd = r.Start.String(), r.End.String()
		}
		pool.Spec.Ranges = append(pool.Spec.Ranges, pr)
	}
	pool.Spec.Selector = ipPoolSelector{Network: p.Network, Priority: uint32(p.Priority)} //nolint:gosec // at most MaxUint32 (Validate)
	if p.Project != "" || p.Namespace != "" || p.GuestCluster != "" {
		// A scope field left out means any: Harvester matches an empty field
		// only against an empty requirement, and a LoadBalancer's namespace
		// requirement is never empty, so "" would make the pool unusable.
		pool.Spec.Selector.Scope = []ipPoolScope{{Project: orAny(p.Project), Namespace: orAny(p.Namespace), GuestCluster: orAny(p.GuestCluster)}}
	}
	return yamlutil.Marshal(pool)
}

// BuildKubeVIPConfigMap renders kube-system/kubevip with cidr-<scope> and
// range-<scope> keys (scope: a namespace or "global"), to merge into the
// existing ConfigMap of older Harvester releases.
func BuildKubeVIPConfigMap(scope string, ranges []IPRange) ([]byte, error) {
	if scope == "" {
		scope = "global"
	}
	if msgs := validation.IsDNS1123Label(scope); len(msgs) > 0 {
		return nil, field.Invalid(FieldScopeNamespace, scope, "must be a namespace name or \"global\"")
	}
	var cidrs, rngs []string
	for _, r := range ranges {
		if r.IsCIDR() {
			cidrs = append(cidrs, r.Subnet.String())
		} else {
			rngs = append(rngs, r.Start.String()+"-"+r.End.String())
		}
	}
	data := map[string]string{}
	if len(cidrs) > 0 {
		data["cidr-"+scope] = strings.Join(cidrs, ",")
	}
	if len(rngs) > 0 {
		data["range-"+scope] = strings.Join(rngs, ",")
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubevip", Namespace: "kube-system"},
		Data:       data,
	}
	return addons.EncodeYAML([]runtime.Object{cm})
}

// ExistingRanges extracts ranges from decoded IPPool objects and kubevip
// ConfigMaps (as generic maps), for overlap checks.
func ExistingRanges(docs []map[string]any) ([]IPRange, error) {
	var out []IPRange
	var errs []error
	add := func(src, v string) {
		r, err := ParseIPRange(v)
		if err != nil {
			errs = append(errs, field.Problem(FieldExisting, "%s %q: %v", src, v, err))
			return
		}
		r.Source = src + " " + v
		out = append(out, r)
	}
	for _, d := range docs {
		kind, _ := d["kind"].(string)
		meta, _ := d["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		switch kind {
		case "IPPool":
			spec, _ := d["spec"].(map[string]any)
			ranges, _ := spec["ranges"].([]any)
			for _, e := range ranges {
				m, _ := e.(map[string]any)
				v, _ := m["subnet"].(string)
				if s, _ := m["rangeStart"].(string); s != "" {
					end, _ := m["rangeEnd"].(string)
					v += "@" + s + "-" + end
				}
				add("IPPool/"+name, v)
			}
		case "ConfigMap":
			data, _ := d["data"].(map[string]any)
			keys := make([]string, 0, len(data))
			for k := range data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !strings.HasPrefix(k, "cidr-") && !strings.HasPrefix(k, "range-") {
					continue
				}
				s, _ := data[k].(string)
				for _, v := range strings.Split(s, ",") {
					add("ConfigMap/"+name+" "+k, strings.TrimSpace(v))
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// anyScope matches every value in an IPPool scope field.
const anyScope = "*"

func orAny(v string) string {
	if v == "" {
		return anyScope
	}
	return v
}
