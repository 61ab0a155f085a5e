// Stand-in for Harvester's load balancer controller, load-balancer-harvester
// v1.8.1: an IP pool's address allocation. It follows
// https://github.com/harvester/load-balancer-harvester/blob/v1.8.1/pkg/ipam/allocator.go.

// Package lb is the pure part of the simulated Harvester load balancer
// controller: the pool choice (ippool.go), IP pool address allocation and
// backend selection. The LoadBalancer and IPPool types are Harvester's
// API (internal/lbapi, plumbing). The controller that does the API calls
// lives in sim/controllers.
package lb

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// addrRange is a parsed pool range with Harvester's defaults applied.
type addrRange struct {
	subnet     netip.Prefix
	start, end netip.Addr
	gateway    netip.Addr // invalid when there is none
}

func (r addrRange) String() string { return r.start.String() + "-" + r.end.String() }

func (r addrRange) contains(a netip.Addr) bool {
	return !a.Less(r.start) && !r.end.Less(a)
}

// parseRange applies the defaults: start = network+1, end = broadcast-1,
// gateway = network+1 (never handed out); a /32 is its one address.
func parseRange(r lbapi.Range) (addrRange, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(r.Subnet))
	if err != nil || !p.Addr().Is4() {
		return addrRange{}, fmt.Errorf("subnet %q: not an IPv4 CIDR like 192.168.0.0/24", r.Subnet)
	}
	p = p.Masked()
	network, broadcast := bounds(p)
	out := addrRange{subnet: p, start: network, end: broadcast}
	if p.Bits() < 31 {
		out.start, out.end, out.gateway = network.Next(), broadcast.Prev(), network.Next()
	}
	for _, f := range []struct {
		name, value string
		into        *netip.Addr
	}{{"rangeStart", r.RangeStart, &out.start}, {"rangeEnd", r.RangeEnd, &out.end}, {"gateway", r.Gateway, &out.gateway}} {
		if f.value == "" {
			continue
		}
		a, err := netip.ParseAddr(strings.TrimSpace(f.value))
		if err != nil || !p.Contains(a) {
			return addrRange{}, fmt.Errorf("%s %q: not an address in %s", f.name, f.value, p)
		}
		*f.into = a
	}
	if out.end.Less(out.start) {
		return addrRange{}, fmt.Errorf("range %s: start is after end", out)
	}
	return out, nil
}

func bounds(p netip.Prefix) (network, broadcast netip.Addr) {
	b := p.Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return p.Addr(), netip.AddrFrom4(b)
}

func parseRanges(p *lbapi.IPPool) ([]addrRange, error) {
	if len(p.Spec.Ranges) == 0 {
		return nil, fmt.Errorf("lbapi.IPPool %s has no ranges", p.Name)
	}
	out := make([]addrRange, 0, len(p.Spec.Ranges))
	var errs []error
	for i, r := range p.Spec.Ranges {
		ar, err := parseRange(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("lbapi.IPPool %s: spec.ranges[%d]: %w", p.Name, i, err))
			continue
		}
		out = append(out, ar)
	}
	return out, errors.Join(errs...)
}

func rangeSet(rs []addrRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// addresses calls fn for every address the ranges can hand out, gateways
// skipped, starting after `after` (when it is in a range) and wrapping round.
func addresses(rs []addrRange, after netip.Addr, fn func(netip.Addr) bool) {
	var all []netip.Addr
	startAt := 0
	for _, r := range rs {
		for a := r.start; a.IsValid() && r.contains(a); a = a.Next() {
			if a == r.gateway {
				continue
			}
			all = append(all, a)
			if a == after {
				startAt = len(all)
			}
		}
	}
	for i := range all {
		if !fn(all[(startAt+i)%len(all)]) {
			return
		}
	}
}

// Counts sets the pool's total and available from its ranges and
// allocations (available 0 when exhausted is true, a simulator fault).
func Counts(p *lbapi.IPPool, exhausted bool) error {
	rs, err := parseRanges(p)
	if err != nil {
		return err
	}
	var total int64
	addresses(rs, netip.Addr{}, func(netip.Addr) bool { total++; return true })
	p.Status.Total = total
	p.Status.Available = max(total-int64(len(p.Status.Allocated)), 0)
	if exhausted {
		p.Status.Available = 0
	}
	return nil
}

// NoAddressError is Harvester's message for an exhausted pool.
func noAddressError(rs []addrRange) error {
	return fmt.Errorf("no IP addresses available in range set: %s", rangeSet(rs))
}

// Allocate gives owner ("namespace/name" of the lbapi.LoadBalancer) an address
// of pool p, updating p's status: the address owner already holds, else
// the one it held before (allocatedHistory), else round robin from
// lastAllocated+1. exhausted (a simulator fault) makes the pool behave as
// if no address were free.
func Allocate(p *lbapi.IPPool, owner string, exhausted bool) (lbapi.AllocatedAddress, error) {
	rs, err := parseRanges(p)
	if err != nil {
		return lbapi.AllocatedAddress{}, err
	}
	if ip := heldBy(p.Status.Allocated, owner); ip != "" {
		return addressOf(p.Name, rs, ip)
	}
	if exhausted {
		return lbapi.AllocatedAddress{}, noAddressError(rs)
	}
	var chosen netip.Addr
	if ip := heldBy(p.Status.AllocatedHistory, owner); ip != "" {
		if a, err := netip.ParseAddr(ip); err == nil && p.Status.Allocated[ip] == "" && inRanges(rs, a) {
			chosen = a
		}
	}
	if !chosen.IsValid() {
		last, _ := netip.ParseAddr(p.Status.LastAllocated)
		addresses(rs, last, func(a netip.Addr) bool {
			if p.Status.Allocated[a.String()] != "" {
				return true
			}
			chosen = a
			return false
		})
	}
	if !chosen.IsValid() {
		return lbapi.AllocatedAddress{}, noAddressError(rs)
	}
	ip := chosen.String()
	if p.Status.Allocated == nil {
		p.Status.Allocated = map[string]string{}
	}
	p.Status.Allocated[ip] = owner
	delete(p.Status.AllocatedHistory, ip)
	p.Status.LastAllocated = ip
	if err := Counts(p, false); err != nil {
		return lbapi.AllocatedAddress{}, err
	}
	return addressOf(p.Name, rs, ip)
}

// Release returns owner's address of p into allocatedHistory; it reports
// whether p changed.
func Release(p *lbapi.IPPool, owner string) bool {
	ip := heldBy(p.Status.Allocated, owner)
	if ip == "" {
		return false
	}
	delete(p.Status.Allocated, ip)
	if p.Status.AllocatedHistory == nil {
		p.Status.AllocatedHistory = map[string]string{}
	}
	p.Status.AllocatedHistory[ip] = owner
	p.Status.Available++
	return true
}

// heldBy returns the address mapped to owner (the lowest, should there be
// several).
func heldBy(m map[string]string, owner string) string {
	var ips []string
	for ip, o := range m {
		if o == owner {
			ips = append(ips, ip)
		}
	}
	sort.Strings(ips)
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

func inRanges(rs []addrRange, a netip.Addr) bool {
	for _, r := range rs {
		if r.contains(a) && a != r.gateway {
			return true
		}
	}
	return false
}

func addressOf(pool string, rs []addrRange, ip string) (lbapi.AllocatedAddress, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return lbapi.AllocatedAddress{}, fmt.Errorf("lbapi.IPPool %s: allocated address %q: %w", pool, ip, err)
	}
	for _, r := range rs {
		if !r.subnet.Contains(a) {
			continue
		}
		out := lbapi.AllocatedAddress{IPPool: pool, IP: ip, Mask: net.IP(net.CIDRMask(r.subnet.Bits(), 32)).String()}
		if r.gateway.IsValid() {
			out.Gateway = r.gateway.String()
		}
		return out, nil
	}
	return lbapi.AllocatedAddress{}, fmt.Errorf("lbapi.IPPool %s: allocated address %s is in none of its ranges", pool, ip)
}
