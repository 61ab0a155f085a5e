package controllers

import (
	"net/netip"

	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/guestnet"
	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

// guestOnNetwork puts a running VMI's guest on the guest network (when
// the simulator has one) with the addresses it reports, the logins its
// cloud-init made and the OS of its first image.
func (s *sim) guestOnNetwork(c *vmiContext, src guestSources, ips []string) {
	if s.opts.GuestNetwork == nil {
		return
	}
	g := guestFor(c, src, s.faults().Match(fault.DockerEngine, c.u.GetNamespace(), c.vmName) != "")
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			g.Addrs = append(g.Addrs, a)
		}
	}
	if err := s.opts.GuestNetwork.Set(c.key, g); err != nil {
		s.log.Warn("put guest on the network", "vmi", c.key, "err", err)
	}
}

// guestFor is the guest as a login sees it (no addresses).
func guestFor(c *vmiContext, src guestSources, docker bool) guestnet.Guest {
	image := ""
	if len(src.ImageNames) > 0 {
		image = src.ImageNames[0]
	}
	os := guestnet.OSOf("", image)
	access, err := userdata.ReadAccess(src.UserData, os.DefaultUser)
	if err != nil {
		access, _ = userdata.ReadAccess(nil, os.DefaultUser)
	}
	host := access.Hostname
	if host == "" {
		host = c.vmi.Spec.Hostname
	}
	if host == "" {
		host = c.vmName
	}
	return guestnet.Guest{Access: access, Hostname: host, OS: os, Docker: docker}
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
