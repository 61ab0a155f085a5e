package staticip

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestMAC(t *testing.T) {
	a := MAC("default", "pool1-m1", "nic-0")
	if a != MAC("default", "pool1-m1", "nic-0") {
		t.Fatal("MAC is not stable")
	}
	seen := map[string]string{}
	for _, in := range [][3]string{{"default", "pool1-m1", "nic-0"}, {"default", "pool1-m1", "nic-1"}, {"default", "pool1-m2", "nic-0"}, {"other", "pool1-m1", "nic-0"}} {
		m := MAC(in[0], in[1], in[2])
		hw, err := net.ParseMAC(m)
		if err != nil || len(hw) != 6 {
			t.Fatalf("MAC%v = %q is not a MAC: %v", in, m, err)
		}
		if hw[0]&0x02 == 0 || hw[0]&0x01 != 0 {
			t.Errorf("MAC%v = %s is not locally administered unicast", in, m)
		}
		if prev, dup := seen[m]; dup {
			t.Errorf("MAC%v = %s, the same as %s", in, m, prev)
		}
		seen[m] = strings.Join(in[:], "/")
	}
}

func TestClaimName(t *testing.T) {
	addr := netip.MustParseAddr("10.0.0.12")
	for _, tc := range []struct{ network, want string }{
		{"default/vlan1", "static-ip.default.vlan1.10-0-0-12"},
		{"harvester-public/mgmt-untagged", "static-ip.harvester-public.mgmt-untagged.10-0-0-12"},
		{"ns/" + strings.Repeat("n", 250), "static-ip." + NetworkValue("ns/"+strings.Repeat("n", 250)) + ".10-0-0-12"},
	} {
		if got := ClaimName(tc.network, addr); got != tc.want {
			t.Errorf("ClaimName(%q) = %q, want %q", tc.network, got, tc.want)
		}
	}
}

// TestClaimedAddress: the address is read back from every claim name of
// the network, the long (hashed) form too; a claim of another network, an
// address of another form, or any other name is none.
func TestClaimedAddress(t *testing.T) {
	long := "ns/" + strings.Repeat("n", 250)
	for _, tc := range []struct {
		network, name string
		want          string // "" for none
	}{
		{"default/vlan1", "static-ip.default.vlan1.10-0-0-12", "10.0.0.12"},
		{long, "static-ip." + NetworkValue(long) + ".192-168-7-1", "192.168.7.1"},
		{"default/vlan1", "static-ip.default.vlan2.10-0-0-12", ""},
		{"default/vlan1", "static-ip.default.vlan1.10-0-0-012", ""},
		{"default/vlan1", "static-ip.default.vlan1.10.0.0.12", ""},
		{"default/vlan1", "kube-root-ca.crt", ""},
		{"default/vlan1", "nodots", ""},
	} {
		got, ok := ClaimedAddress(tc.network, tc.name)
		if tc.want == "" && ok || tc.want != "" && (!ok || got != netip.MustParseAddr(tc.want)) {
			t.Errorf("ClaimedAddress(%q, %q) = %v, %v; want %q", tc.network, tc.name, got, ok, tc.want)
		}
	}
}

func TestClaimData(t *testing.T) {
	c := Claim{Address: netip.MustParsePrefix("10.0.0.12/24"), Range: "10.0.0.10-10.0.0.59/24", Network: "default/vlan1", NIC: "nic-0", MAC: "02:00:00:00:00:01", Machine: "m1"}
	back, err := ClaimFromData(ClaimData(c))
	if err != nil || back != c {
		t.Fatalf("ClaimFromData(ClaimData(c)) = %+v, %v; want %+v", back, err, c)
	}
	if _, err := ClaimFromData(map[string]string{KeyAddress: "10.0.0.12"}); err == nil {
		t.Fatal("an address without prefix was accepted")
	}
}
