package staticip

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// MaxRangeSize is the largest number of addresses one range may hold: the
// allocator reads every claim of the range, so a range is a pool's worth
// of machines, not a whole network.
const MaxRangeSize = 4096

// Range is an inclusive IPv4 address range inside one subnet, written
// FIRST-LAST/PREFIX (10.0.0.10-10.0.0.59/24).
type Range struct {
	First, Last netip.Addr
	Prefix      netip.Prefix // the subnet (masked), e.g. 10.0.0.0/24
}

// String is the canonical FIRST-LAST/PREFIX form.
func (r Range) String() string {
	return r.First.String() + "-" + r.Last.String() + "/" + strconv.Itoa(r.Prefix.Bits())
}

// Size is the number of addresses in the range.
func (r Range) Size() int {
	return int(toUint(r.Last)-toUint(r.First)) + 1
}

// Addresses lists the range's addresses, lowest first.
func (r Range) Addresses() []netip.Addr {
	out := make([]netip.Addr, 0, r.Size())
	for a := r.First; ; a = a.Next() {
		out = append(out, a)
		if a == r.Last {
			return out
		}
	}
}

// Contains reports whether a is in the range.
func (r Range) Contains(a netip.Addr) bool {
	return a.Is4() && r.First.Compare(a) <= 0 && a.Compare(r.Last) <= 0
}

// WithPrefix is a's CIDR form in the range's subnet (10.0.0.12/24).
func (r Range) WithPrefix(a netip.Addr) string {
	return netip.PrefixFrom(a, r.Prefix.Bits()).String()
}

// ParseRange parses FIRST-LAST/PREFIX. Both ends must be IPv4 addresses of
// the subnet of that prefix length, FIRST <= LAST, neither the subnet's
// network nor (below /31) its broadcast address, and the range at most
// MaxRangeSize addresses. Errors say what would be valid.
func ParseRange(s string) (Range, error) {
	const form = "FIRST-LAST/PREFIX, e.g. 10.0.0.10-10.0.0.59/24"
	body, bits, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Range{}, fmt.Errorf("%q has no /PREFIX; write %s", s, form)
	}
	first, last, ok := strings.Cut(body, "-")
	if !ok {
		return Range{}, fmt.Errorf("%q has no FIRST-LAST; write %s", s, form)
	}
	n, err := strconv.Atoi(bits)
	if err != nil || n < 1 || n > 32 || strings.TrimSpace(bits) != bits {
		return Range{}, fmt.Errorf("%q: prefix length %q must be a number 1-32; write %s", s, bits, form)
	}
	var r Range
	if r.First, err = parseV4(first); err != nil {
		return Range{}, fmt.Errorf("%q: first address: %w", s, err)
	}
	if r.Last, err = parseV4(last); err != nil {
		return Range{}, fmt.Errorf("%q: last address: %w", s, err)
	}
	r.Prefix = netip.PrefixFrom(r.First, n).Masked()
	switch {
	case r.Last.Less(r.First):
		return Range{}, fmt.Errorf("%q: the first address %s is after the last %s", s, r.First, r.Last)
	case !r.Prefix.Contains(r.Last):
		return Range{}, fmt.Errorf("%q: %s and %s are not in one /%d subnet (%s holds %s); widen the prefix or narrow the range", s, r.First, r.Last, n, r.Prefix, lastOf(r.Prefix))
	case n < 31 && r.First == r.Prefix.Addr():
		return Range{}, fmt.Errorf("%q: %s is the network address of %s; start at %s or later", s, r.First, r.Prefix, r.Prefix.Addr().Next())
	case n < 31 && r.Last == lastOf(r.Prefix):
		return Range{}, fmt.Errorf("%q: %s is the broadcast address of %s; end at %s or earlier", s, r.Last, r.Prefix, r.Last.Prev())
	case r.Size() > MaxRangeSize:
		return Range{}, fmt.Errorf("%q holds %d addresses; a range may hold at most %d", s, r.Size(), MaxRangeSize)
	}
	// Every unusable block is at least a /16, larger than any range, so a
	// range that touches one has an end in it.
	firstKind, lastKind := unusableKind(r.First), unusableKind(r.Last)
	switch {
	case firstKind != "" && firstKind == lastKind:
		return Range{}, fmt.Errorf("%q: the range is %s; give a range of unicast addresses machines can hold", s, firstKind)
	case firstKind != "" || lastKind != "":
		var why []string
		for _, a := range []netip.Addr{r.First, r.Last} {
			if kind := unusableKind(a); kind != "" {
				why = append(why, a.String()+" is "+kind)
			}
		}
		return Range{}, fmt.Errorf("%q: %s; give a range of unicast addresses machines can hold", s, strings.Join(why, ", "))
	}
	return r, nil
}

// Unusable says why a is no address a machine's NIC can hold, or "" when
// it can be (see unusableKind).
func Unusable(a netip.Addr) string {
	if kind := unusableKind(a); kind != "" {
		return a.String() + " is " + kind
	}
	return ""
}

// unusableKind is the kind of a when no host can hold it: loopback,
// link-local, multicast, "this network" (0.0.0.0/8, the unspecified
// address among it) or reserved (240.0.0.0/4, the limited broadcast
// 255.255.255.255 among it); "" for any other address.
func unusableKind(a netip.Addr) string {
	switch {
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return fmt.Sprintf(`in %s ("this network", never a host's address)`, thisNetwork)
	case a.IsLoopback():
		return "loopback (127.0.0.0/8)"
	case a.IsLinkLocalUnicast():
		return "link-local (169.254.0.0/16)"
	case a.IsMulticast():
		return "multicast (224.0.0.0/4)"
	case a == limitedBroadcast:
		return "the limited broadcast address"
	case reserved.Contains(a):
		return fmt.Sprintf("in the reserved block %s", reserved)
	}
	return ""
}

var (
	thisNetwork      = netip.MustParsePrefix("0.0.0.0/8")
	reserved         = netip.MustParsePrefix("240.0.0.0/4")
	limitedBroadcast = netip.MustParseAddr("255.255.255.255")
)

func parseV4(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("%q is not an IPv4 address (like 10.0.0.10)", s)
	}
	return a, nil
}

func toUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// lastOf is the highest address of a prefix.
func lastOf(p netip.Prefix) netip.Addr {
	v := toUint(p.Addr()) | (1<<(32-p.Bits()) - 1)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
