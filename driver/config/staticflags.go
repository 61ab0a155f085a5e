package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// parseGateway parses the gateway of a range: a unicast IPv4 address a
// host can hold (see staticip.Unusable), inside the range's subnet, neither its
// network nor (below /31) its broadcast address, and outside the range
// (the gateway is never handed out).
func parseGateway(s string, r staticip.Range) (netip.Addr, error) {
	g, err := netip.ParseAddr(s)
	if err != nil || !g.Is4() {
		return netip.Addr{}, fmt.Errorf("%q is not an IPv4 address (like 10.0.0.10)", s)
	}
	if why := staticip.Unusable(g); why != "" {
		return netip.Addr{}, fmt.Errorf("%s; a gateway must be a unicast address of the range's subnet", why)
	}
	if !r.Prefix.IsValid() {
		return g, nil
	}
	switch n := r.Prefix.Bits(); {
	case !r.Prefix.Contains(g):
		return netip.Addr{}, fmt.Errorf("%s is not in the range's subnet %s", g, r.Prefix)
	case n < 31 && g == r.Prefix.Addr():
		return netip.Addr{}, fmt.Errorf("%s is the network address of %s, not a host; the gateway is one of %s to %s", g, r.Prefix, g.Next(), broadcast(r.Prefix).Prev())
	case n < 31 && g == broadcast(r.Prefix):
		return netip.Addr{}, fmt.Errorf("%s is the broadcast address of %s, not a host; the gateway is one of %s to %s", g, r.Prefix, r.Prefix.Addr().Next(), g.Prev())
	case r.Contains(g):
		return netip.Addr{}, fmt.Errorf("%s is inside the range %s; machines would be given the gateway's address: move it out of the range", g, r)
	}
	return g, nil
}

// parseDNS parses name server addresses (IPv4 or IPv6), each entry may
// itself be a comma-separated list.
func parseDNS(values []string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not an IP address", s)
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// broadcast is the highest address of the IPv4 prefix p.
func broadcast(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom4(b)
}
