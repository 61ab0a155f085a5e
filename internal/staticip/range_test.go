package staticip

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
		size          int
	}{
		{in: "10.0.0.10-10.0.0.59/24", want: "10.0.0.10-10.0.0.59/24", size: 50},
		{in: " 10.0.0.10-10.0.0.10/24 ", want: "10.0.0.10-10.0.0.10/24", size: 1},
		{in: "192.168.0.254-192.168.1.1/23", want: "192.168.0.254-192.168.1.1/23", size: 4},
		{in: "10.0.0.0-10.0.0.1/31", want: "10.0.0.0-10.0.0.1/31", size: 2},
		{in: "10.0.0.7-10.0.0.7/32", want: "10.0.0.7-10.0.0.7/32", size: 1},
		{in: "10.0.0.10-10.0.0.59", err: "has no /PREFIX"},
		{in: "10.0.0.10/24", err: "has no FIRST-LAST"},
		{in: "10.0.0.10-10.0.0.59/33", err: "prefix length \"33\" must be a number 1-32"},
		{in: "10.0.0.10-10.0.0.59/x", err: "must be a number 1-32"},
		{in: "10.0.0.10-10.0.0.59/ 24", err: "must be a number 1-32"},
		{in: "10.0.0.x-10.0.0.59/24", err: "first address: \"10.0.0.x\" is not an IPv4 address"},
		{in: "10.0.0.1-fd00::1/24", err: "last address: \"fd00::1\" is not an IPv4 address"},
		{in: "10.0.0.59-10.0.0.10/24", err: "the first address 10.0.0.59 is after the last 10.0.0.10"},
		{in: "10.0.0.10-10.0.1.10/24", err: "10.0.0.10 and 10.0.1.10 are not in one /24 subnet (10.0.0.0/24 holds 10.0.0.255)"},
		{in: "10.0.0.0-10.0.0.9/24", err: "10.0.0.0 is the network address of 10.0.0.0/24; start at 10.0.0.1"},
		{in: "10.0.0.200-10.0.0.255/24", err: "10.0.0.255 is the broadcast address of 10.0.0.0/24; end at 10.0.0.254"},
		{in: "10.0.0.1-10.0.255.254/16", err: "holds 65534 addresses; a range may hold at most 4096"},
		// Addresses no machine can hold (issue 30, 5).
		{in: "127.0.0.2-127.0.0.9/8", err: `"127.0.0.2-127.0.0.9/8": the range is loopback (127.0.0.0/8)`},
		{in: "169.254.0.10-169.254.0.20/16", err: "the range is link-local (169.254.0.0/16)"},
		{in: "224.0.0.10-224.0.0.20/24", err: "the range is multicast (224.0.0.0/4)"},
		{in: "239.255.255.1-239.255.255.9/24", err: "the range is multicast"},
		{in: "0.0.0.1-0.0.0.9/24", err: `the range is in 0.0.0.0/8 ("this network", never a host's address)`},
		{in: "0.0.0.0-0.0.0.0/32", err: "the range is in 0.0.0.0/8"},
		{in: "255.255.255.255-255.255.255.255/32", err: "the range is the limited broadcast address"},
		{in: "255.255.255.1-255.255.255.9/24", err: "the range is in the reserved block 240.0.0.0/4"},
		{in: "240.0.0.1-240.0.0.9/24", err: "the range is in the reserved block 240.0.0.0/4"},
		{in: "126.255.255.250-127.0.0.5/7", err: "127.0.0.5 is loopback (127.0.0.0/8); give a range of unicast addresses"},
		{in: "223.255.255.250-224.0.0.5/2", err: "224.0.0.5 is multicast (224.0.0.0/4)"},
		{in: "1.0.0.1-1.0.0.9/24", want: "1.0.0.1-1.0.0.9/24", size: 9},
		{in: "223.255.255.1-223.255.255.9/24", want: "223.255.255.1-223.255.255.9/24", size: 9},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRange(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseRange(%q) = %v, %v; want an error with %q", tc.in, r, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRange(%q): %v", tc.in, err)
			}
			if r.String() != tc.want || r.Size() != tc.size || len(r.Addresses()) != tc.size {
				t.Fatalf("ParseRange(%q) = %s (%d, %d addresses), want %s (%d)", tc.in, r, r.Size(), len(r.Addresses()), tc.want, tc.size)
			}
		})
	}
}

func TestRangeAddresses(t *testing.T) {
	r, err := ParseRange("192.168.0.254-192.168.1.1/23")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range r.Addresses() {
		got = append(got, r.WithPrefix(a))
	}
	want := "192.168.0.254/23 192.168.0.255/23 192.168.1.0/23 192.168.1.1/23"
	if strings.Join(got, " ") != want {
		t.Fatalf("addresses %v, want %s", got, want)
	}
	if !r.Contains(netip.MustParseAddr("192.168.1.0")) || r.Contains(netip.MustParseAddr("192.168.1.2")) {
		t.Fatal("Contains disagrees with the range")
	}
}

// FuzzParseRange: the parser never panics, and what it accepts is a
// well-formed range that prints back to itself.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"10.0.0.10-10.0.0.59/24", "10.0.0.0-10.0.0.1/31", "1.2.3.4-1.2.3.4/32", "10.0.0.1-10.0.255.254/16", "-/", "::1-::2/64", "10.0.0.5-10.0.0.4/24"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			return
		}
		if r.Size() < 1 || r.Size() > MaxRangeSize || !r.Prefix.Contains(r.First) || !r.Prefix.Contains(r.Last) || r.Last.Less(r.First) {
			t.Fatalf("ParseRange(%q) accepted a bad range %s", s, r)
		}
		again, err := ParseRange(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRange(%q) = %s does not parse back: %v, %v", s, r, again, err)
		}
	})
}

// TestUnusableAgreesWithNetip: every address netip calls loopback,
// link-local, multicast or unspecified is unusable, and so are the ends of
// 0.0.0.0/8 and 240.0.0.0/4; ordinary unicast addresses are not.
func TestUnusableAgreesWithNetip(t *testing.T) {
	for _, s := range []string{"0.0.0.0", "0.255.255.255", "127.0.0.1", "127.255.255.254", "169.254.0.1", "224.0.0.1", "239.255.255.255",
		"240.0.0.0", "254.255.255.255", "255.255.255.255"} {
		if Unusable(netip.MustParseAddr(s)) == "" {
			t.Errorf("%s is usable", s)
		}
	}
	for _, s := range []string{"1.0.0.0", "10.0.0.1", "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "192.168.1.1", "223.255.255.255"} {
		if why := Unusable(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s is unusable: %s", s, why)
		}
	}
}
