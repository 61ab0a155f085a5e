package guestnet

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

// Guest is what the network knows of one running guest.
type Guest struct {
	Addrs    []netip.Addr
	Access   userdata.Access // who may log in, from its cloud-init
	Hostname string
	OS       OS
	Docker   bool // a Docker engine listens on DockerPort
}

// Network holds the running guests' addresses on one interface.
type Network struct {
	iface  string
	log    *slog.Logger
	sshd   *sshServer
	mu     sync.Mutex
	guests map[string]*entry // VMI key -> its addresses
}

type entry struct {
	mu        sync.Mutex
	guest     Guest
	listeners map[netip.Addr]net.Listener
	conns     map[net.Conn]bool
}

// current is the guest as last Set.
func (e *entry) current() Guest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.guest
}

// New checks that interface iface exists and returns an empty network on it.
func New(iface string, log *slog.Logger) (*Network, error) {
	if _, err := net.InterfaceByName(iface); err != nil {
		return nil, fmt.Errorf("--%s %s: %w", FlagInterface, iface, err)
	}
	sshd, err := newSSHServer(log)
	if err != nil {
		return nil, err
	}
	return &Network{iface: iface, log: log, sshd: sshd, guests: map[string]*entry{}}, nil
}

// Set puts the guest of VMI key on the network as g describes it: its
// addresses on the interface, an SSH server on port 22 of each; addresses
// it no longer has are removed.
func (n *Network) Set(key string, g Guest) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.guests[key]
	if e == nil {
		e = &entry{listeners: map[netip.Addr]net.Listener{}, conns: map[net.Conn]bool{}}
		n.guests[key] = e
		n.log.Info("guest on the network", "vmi", key, "addresses", g.Addrs, "docker", g.Docker)
	}
	e.mu.Lock()
	e.guest = g
	e.mu.Unlock()
	var errs []error
	for a, l := range e.listeners {
		if !slices.Contains(g.Addrs, a) {
			errs = append(errs, l.Close(), DelAddr(n.iface, a))
			delete(e.listeners, a)
		}
	}
	for _, a := range g.Addrs {
		if e.listeners[a] != nil {
			continue
		}
		if err := AddAddr(n.iface, a); err != nil {
			errs = append(errs, err)
			continue
		}
		l, err := net.Listen("tcp", netip.AddrPortFrom(a, 22).String())
		if err != nil {
			errs = append(errs, fmt.Errorf("guest %s: listen for SSH: %w", key, err))
			continue
		}
		e.listeners[a] = l
		go n.sshd.serve(l, e)
	}
	return errors.Join(errs...)
}

// Remove takes the guest of VMI key off the network (nothing when it is
// not on it).
func (n *Network) Remove(key string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.guests[key]
	if old == nil {
		return nil
	}
	delete(n.guests, key)
	var errs []error
	for a, l := range old.listeners {
		errs = append(errs, l.Close(), DelAddr(n.iface, a))
	}
	old.mu.Lock()
	for c := range old.conns {
		_ = c.Close() // the guest stopped: its sessions end
	}
	old.mu.Unlock()
	n.log.Info("guest off the network", "vmi", key)
	return errors.Join(errs...)
}

// Close takes every guest off the network.
func (n *Network) Close() error {
	n.mu.Lock()
	keys := make([]string, 0, len(n.guests))
	for k := range n.guests {
		keys = append(keys, k)
	}
	n.mu.Unlock()
	var errs []error
	for _, k := range keys {
		errs = append(errs, n.Remove(k))
	}
	return errors.Join(errs...)
}
