// Stand-in for managed DHCP, vm-dhcp-controller main at c3042d6, the v1.9
// line: a pool's address allocation. It follows
// https://github.com/harvester/vm-dhcp-controller/blob/c3042d6cff7d939b6d939d2f6ef2b019ba3a0870/pkg/ipam/ipam.go.

package controllers

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
)

// dhcpRequest is one NIC of one vmnetcfg on a pool's network.
type dhcpRequest struct {
	Config string // the vmnetcfg's "namespace/name"
	MAC    string
	Want   string // the address asked for ("" none)
	Had    string // the address allocated to it before ("" none)
}

// dhcpResult is what the pool gives one request.
type dhcpResult struct {
	Address string // "" when none
	Problem string // why Want could not be given
}

// poolAddresses lists start..end of the pool (at most 65536).
func poolAddresses(c dhcpapi.IPv4Config) ([]netip.Addr, error) {
	start, err1 := netip.ParseAddr(c.Pool.Start)
	end, err2 := netip.ParseAddr(c.Pool.End)
	if err1 != nil || err2 != nil || !start.Is4() || end.Less(start) {
		return nil, fmt.Errorf("pool %q-%q is not an IPv4 range", c.Pool.Start, c.Pool.End)
	}
	var out []netip.Addr
	for a := start; len(out) < 1<<16; a = a.Next() {
		out = append(out, a)
		if a == end {
			break
		}
	}
	return out, nil
}

// allocateDHCP recomputes a pool's allocation from its live requests, as
// the add-on keeps it: excluded addresses and the server and router are
// never handed out; a request keeps what it had; an address asked for
// (the static-ip annotation) is given when free and in the pool, and
// refused with the webhook's reason otherwise; the others get a free
// address picked from a hash of their MAC (the add-on's choice is
// effectively random). It returns status.ipv4.allocated and the result of
// each request (by index).
func allocateDHCP(c dhcpapi.IPv4Config, reqs []dhcpRequest) (map[string]string, []dhcpResult, error) {
	addrs, err := poolAddresses(c)
	if err != nil {
		return nil, nil, err
	}
	inPool := map[string]bool{}
	for _, a := range addrs {
		inPool[a.String()] = true
	}
	allocated := map[string]string{}
	for _, e := range c.Pool.Exclude {
		allocated[e] = dhcpapi.Excluded
	}
	for _, r := range []string{c.ServerIP, c.Router} {
		if r != "" && inPool[r] {
			allocated[r] = dhcpapi.Reserved
		}
	}
	res := make([]dhcpResult, len(reqs))
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Config < reqs[order[b]].Config })
	// Kept first, then asked-for addresses, then the rest.
	for _, i := range order {
		r := reqs[i]
		if r.Had != "" && (r.Want == "" || r.Want == r.Had) && inPool[r.Had] && allocated[r.Had] == "" {
			allocated[r.Had], res[i].Address = r.MAC, r.Had
		}
	}
	for _, i := range order {
		r := reqs[i]
		if res[i].Address != "" || r.Want == "" {
			continue
		}
		switch holder := allocated[r.Want]; {
		case !inPool[r.Want]:
			res[i].Problem = fmt.Sprintf("ip %s is out of range %s-%s", r.Want, c.Pool.Start, c.Pool.End)
		case holder == dhcpapi.Excluded || holder == dhcpapi.Reserved:
			res[i].Problem = fmt.Sprintf("ip %s is %s", r.Want, strings.ToLower(holder))
		case holder != "":
			res[i].Problem = fmt.Sprintf("ip %s is already allocated to mac %s", r.Want, holder)
		default:
			allocated[r.Want], res[i].Address = r.MAC, r.Want
		}
	}
	for _, i := range order {
		r := reqs[i]
		if res[i].Address != "" || res[i].Problem != "" {
			continue
		}
		start := int(hash64(r.MAC) % uint64(len(addrs)))
		for p := range addrs {
			a := addrs[(start+p)%len(addrs)].String()
			if allocated[a] == "" {
				allocated[a], res[i].Address = r.MAC, a
				break
			}
		}
		if res[i].Address == "" {
			res[i].Problem = "no IP addresses available in pool " + c.Pool.Start + "-" + c.Pool.End
		}
	}
	return allocated, res, nil
}
