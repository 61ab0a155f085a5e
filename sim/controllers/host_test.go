package controllers

import (
	"testing"
	"time"
)

// TestHostDownAndBeats: a host goes down once (the first time counts, a
// second take-down changes nothing), comes back up with no time left, and
// its virt-handler beats once per handlerHeartbeatInterval; Hosts hands
// out one Host per name.
func TestHostDownAndBeats(t *testing.T) {
	hs := NewHosts()
	h := hs.Host("harvester-node-1")
	if hs.Host("harvester-node-1") != h || hs.Host("harvester-node-2") == h {
		t.Fatal("Hosts does not hand out one Host per name")
	}
	t0 := time.Date(2026, 12, 8, 4, 0, 0, 0, time.UTC)
	if h.Down() || !h.setDown(true, t0) || h.setDown(true, t0.Add(time.Minute)) {
		t.Fatal("a host up goes down once")
	}
	if since, down := h.DownSince(); !down || !since.Equal(t0) {
		t.Errorf("down since %v (%v), want %v", since, down, t0)
	}
	if !h.setDown(false, t0) || h.Down() || h.setDown(false, t0) {
		t.Error("a host down comes up once")
	}
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {30 * time.Second, false}, {time.Minute, true}, {time.Minute + time.Second, false}} {
		if got := h.handlerBeatDue(t0.Add(c.at)); got != c.want {
			t.Errorf("beat due at +%s = %v, want %v", c.at, got, c.want)
		}
	}
}
