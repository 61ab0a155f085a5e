package controllers

import (
	"sync"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// vmiState is what the simulated virt-handler remembers between
// reconciles: addresses it gave, exact phase start
// times (status timestamps have second precision) and which one-off events
// it already emitted.
type vmiState struct {
	mu       sync.Mutex
	addrs    map[string][]string // VMI key -> addresses
	since    map[string]phaseMark
	reported map[string]string // VMI key + topic -> last message emitted
	uids     map[string]string // VMI key -> UID the entries above belong to
}

type phaseMark struct {
	uid   string
	phase kubevirtv1.VirtualMachineInstancePhase
	at    time.Time
}

func newVMIState() *vmiState {
	return &vmiState{addrs: map[string][]string{},
		since: map[string]phaseMark{}, reported: map[string]string{}, uids: map[string]string{}}
}

// track forgets what was remembered about an earlier VMI of the same name.
func (v *vmiState) track(key, uid string) {
	v.mu.Lock()
	old, ok := v.uids[key]
	v.uids[key] = uid
	v.mu.Unlock()
	if ok && old != uid {
		v.forgetEntries(key)
	}
}

// forget drops everything about a VMI that is gone (or was replaced).
func (v *vmiState) forget(key string) {
	v.mu.Lock()
	delete(v.uids, key)
	v.mu.Unlock()
	v.forgetEntries(key)
}

func (v *vmiState) forgetEntries(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.addrs, key)
	delete(v.since, key)
	for k := range v.reported {
		if len(k) > len(key) && k[:len(key)] == key && k[len(key)] == '|' {
			delete(v.reported, k)
		}
	}
}

func (v *vmiState) markPhase(key, uid string, phase kubevirtv1.VirtualMachineInstancePhase, at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.since[key] = phaseMark{uid: uid, phase: phase, at: at}
}

// phaseStart returns the remembered start of the phase, if it is the one
// recorded for this VMI incarnation.
func (v *vmiState) phaseStart(key, uid string, phase kubevirtv1.VirtualMachineInstancePhase) (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m, ok := v.since[key]
	if !ok || m.uid != uid || m.phase != phase {
		return time.Time{}, false
	}
	return m.at, true
}

func (v *vmiState) setAddrs(key string, ips []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ips == nil {
		delete(v.addrs, key)
		return
	}
	v.addrs[key] = ips
}

func (v *vmiState) addrsOf(key string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.addrs[key]
}

// otherAddrs returns the addresses held by VMIs other than key.
func (v *vmiState) otherAddrs(key string) map[string]bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[string]bool{}
	for k, ips := range v.addrs {
		if k == key {
			continue
		}
		for _, ip := range ips {
			out[ip] = true
		}
	}
	return out
}

// once reports whether message differs from the last one recorded for the
// VMI and topic, recording it.
func (v *vmiState) once(key, topic, message string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := key + "|" + topic
	if v.reported[k] == message {
		return false
	}
	v.reported[k] = message
	return true
}
