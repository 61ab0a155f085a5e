package guestnet

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
)

// Guest is what the network knows of one running guest.
type Guest struct {
	Addrs []netip.Addr
}

// Network holds the running guests' addresses on one interface.
type Network struct {
	iface  string
	log    *slog.Logger
	mu     sync.Mutex
	guests map[string]*entry // VMI key -> its addresses
}

type entry struct {
	guest Guest
}

// New checks that interface iface exists and returns an empty network on it.
func New(iface string, log *slog.Logger) (*Network, error) {
	if _, err := net.InterfaceByName(iface); err != nil {
		return nil, fmt.Errorf("--%s %s: %w", FlagInterface, iface, err)
	}
	return &Network{iface: iface, log: log, guests: map[string]*entry{}}, nil
}

// Set puts the guest of VMI key on the network as g describes it: its
// addresses on the interface; addresses it no longer has are removed.
func (n *Network) Set(key string, g Guest) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.guests[key]
	var errs []error
	for _, a := range g.Addrs {
		if err := AddAddr(n.iface, a); err != nil {
			errs = append(errs, err)
		}
	}
	if old != nil {
		for _, a := range old.guest.Addrs {
			if !slices.Contains(g.Addrs, a) {
				errs = append(errs, DelAddr(n.iface, a))
			}
		}
	}
	if old == nil {
		n.log.Info("guest on the network", "vmi", key, "addresses", g.Addrs)
	}
	n.guests[key] = &entry{guest: g}
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
	for _, a := range old.guest.Addrs {
		errs = append(errs, DelAddr(n.iface, a))
	}
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
