package controllers

// A simulated Harvester host's own state, which no API object holds:
// whether it is up, since when it is down, and when its virt-handler last
// beat. Its Node is the API server's; its kubelet (heartbeat.go,
// kubelet.go) and virt-handler (handler*.go) stand-ins act on what a Host
// says, and the fault ConfigMap's host-down list takes it down
// (hostdown.go).

import (
	"sync"
	"time"
)

// Host is one simulated host.
type Host struct {
	Name        string
	mu          sync.Mutex
	downSince   time.Time // zero while it is up
	handlerBeat time.Time // its virt-handler's last heartbeat
}

// DownSince reports since when the host is down.
func (h *Host) DownSince() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.downSince, !h.downSince.IsZero()
}

// Down reports whether the host is down: its kubelet and virt-handler
// stopped, as on a dead host.
func (h *Host) Down() bool {
	_, down := h.DownSince()
	return down
}

// setDown takes the host down at now, or brings it up; it reports whether
// that changed anything.
func (h *Host) setDown(down bool, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if down == !h.downSince.IsZero() {
		return false
	}
	h.downSince = time.Time{}
	if down {
		h.downSince = now
	}
	return true
}

// handlerBeatDue reports whether the host's virt-handler beats at now
// (once every handlerHeartbeatInterval), and records the beat if so.
func (h *Host) handlerBeatDue(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now.Sub(h.handlerBeat) < handlerHeartbeatInterval {
		return false
	}
	h.handlerBeat = now
	return true
}

// Hosts are the simulated hosts by name, each made, up, when first asked
// for, and the wake-up of their kubelets' heartbeat loop.
type Hosts struct {
	mu     sync.Mutex
	byName map[string]*Host
	// wake asks the heartbeat loop to run at once (a host came back, the
	// grace period changed).
	wake chan struct{}
}

// NewHosts makes the hosts, all up.
func NewHosts() *Hosts {
	return &Hosts{byName: map[string]*Host{}, wake: make(chan struct{}, 1)}
}

// Host is the host called name.
func (hs *Hosts) Host(name string) *Host {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.byName[name]
	if h == nil {
		h = &Host{Name: name}
		hs.byName[name] = h
	}
	return h
}

// wakeUp has the heartbeat loop run at once.
func (hs *Hosts) wakeUp() {
	select {
	case hs.wake <- struct{}{}:
	default:
	}
}
