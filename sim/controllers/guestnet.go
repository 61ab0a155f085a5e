package controllers

import (
	"net/netip"

	"github.com/harvester-kit/harvester-machine/sim/guestnet"
)

// guestOnNetwork puts a running VMI's guest on the guest network (when
// the simulator has one) with the addresses it reports.
func (s *sim) guestOnNetwork(c *vmiContext, ips []string) {
	if s.opts.GuestNetwork == nil {
		return
	}
	g := guestnet.Guest{}
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			g.Addrs = append(g.Addrs, a)
		}
	}
	if err := s.opts.GuestNetwork.Set(c.key, g); err != nil {
		s.log.Warn("put guest on the network", "vmi", c.key, "err", err)
	}
}

// guestOffNetwork takes the guest of VMI key off the guest network.
func (s *sim) guestOffNetwork(key string) {
	if s.opts.GuestNetwork == nil {
		return
	}
	if err := s.opts.GuestNetwork.Remove(key); err != nil {
		s.log.Warn("take guest off the network", "vmi", key, "err", err)
	}
}
