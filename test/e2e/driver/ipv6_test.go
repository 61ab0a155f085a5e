package driver_test

import (
	"net/netip"
	"strings"
	"testing"
)

// TestIPv6OnlyGuest: a guest with only IPv6 addresses (a link-local one
// first, then a global one; simulator fault ipv6-only) is created, and
// `ip` and `url` answer with its global IPv6 address.
func TestIPv6OnlyGuest(t *testing.T) {
	t.Parallel()
	name := "e2e-ipv6-pool1-v0000"
	simFault(t, "ipv6-only", "default/e2e-ipv6-*")
	t.Cleanup(func() { simFault(t, "ipv6-only", "--remove", "default/e2e-ipv6-*") })
	r := newRM(t, "e2e-ipv6")
	r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")
	t.Cleanup(func() { r.mustRun("rm", "-y", name) })

	vmi := getVMI(t, name)
	if vmi == nil || len(vmi.Status.Interfaces) == 0 || len(vmi.Status.Interfaces[0].IPs) < 2 {
		t.Fatalf("VMI reports no IPv6 addresses: %+v", vmi)
	}
	global := vmi.Status.Interfaces[0].IPs[1]
	if a := netip.MustParseAddr(global); !a.Is6() || a.IsLinkLocalUnicast() {
		t.Fatalf("the simulator's second address %s is not a global IPv6 address", global)
	}
	if got := r.stdout("ip", name); got != global {
		t.Errorf("ip = %q, want %s", got, global)
	}
	if got, want := r.stdout("url", name), "tcp://["+global+"]:2376"; got != want {
		t.Errorf("url = %q, want %s", got, want)
	}
	if st := status(t, r, name); !strings.EqualFold(st, "Running") {
		t.Errorf("status = %q", st)
	}
}
