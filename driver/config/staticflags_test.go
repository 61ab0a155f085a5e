package config

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

func TestParseGateway(t *testing.T) {
	r, err := staticip.ParseRange("10.0.0.10-10.0.0.59/24")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, err string }{
		{in: "10.0.0.1"},
		{in: "10.0.0.254"},
		{in: "10.0.1.1", err: "10.0.1.1 is not in the range's subnet 10.0.0.0/24"},
		{in: "10.0.0.20", err: "10.0.0.20 is inside the range 10.0.0.10-10.0.0.59/24"},
		{in: "gw", err: `"gw" is not an IPv4 address`},
		// Issue 30, 5: the subnet's network and broadcast address, and
		// addresses no host holds, are refused, saying why.
		{in: "10.0.0.0", err: "10.0.0.0 is the network address of 10.0.0.0/24, not a host; the gateway is one of 10.0.0.1 to 10.0.0.254"},
		{in: "10.0.0.255", err: "10.0.0.255 is the broadcast address of 10.0.0.0/24, not a host; the gateway is one of 10.0.0.1 to 10.0.0.254"},
		{in: "127.0.0.1", err: "127.0.0.1 is loopback (127.0.0.0/8); a gateway must be a unicast address"},
		{in: "224.0.0.1", err: "224.0.0.1 is multicast"},
		{in: "169.254.1.1", err: "169.254.1.1 is link-local"},
		{in: "0.0.0.0", err: "0.0.0.0 is in 0.0.0.0/8"},
		{in: "255.255.255.255", err: "255.255.255.255 is the limited broadcast address"},
	} {
		_, err := parseGateway(tc.in, r)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseGateway(%q) = %v, want error %q", tc.in, err, tc.err)
		}
	}
}

func TestParseDNS(t *testing.T) {
	got, err := parseDNS([]string{"10.0.0.2, 1.1.1.1", "", "fd00::53"})
	if err != nil || len(got) != 3 || got[2].String() != "fd00::53" {
		t.Fatalf("ParseDNS = %v, %v", got, err)
	}
	if _, err := parseDNS([]string{"10.0.0.2,dns.example"}); err == nil || !strings.Contains(err.Error(), `"dns.example" is not an IP address`) {
		t.Fatalf("ParseDNS of a name: %v", err)
	}
}

// TestParseGatewayOfSmallSubnets: a /31 has no network or broadcast
// address, so either end may be the gateway.
func TestParseGatewayOfSmallSubnets(t *testing.T) {
	r, err := staticip.ParseRange("10.0.0.0-10.0.0.0/31")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseGateway("10.0.0.1", r); err != nil {
		t.Fatalf("gateway 10.0.0.1 of 10.0.0.0/31: %v", err)
	}
	if _, err := parseGateway("127.0.0.1", staticip.Range{}); err == nil {
		t.Fatal("a loopback gateway without a valid range was accepted")
	}
}
