package fault

import (
	"testing"
	"time"
)

func TestFaultsMatch(t *testing.T) {
	f := ParsePatterns(map[string]string{
		StuckScheduling: "default/stuck-*\n\n# comment\nother/exact\n[bad",
		NoIP:            " default/noip ",
		IPv6Only:        "default/v6-*",
	})
	if len(f.problems) != 1 {
		t.Fatalf("problems = %v, want one for the bad pattern", f.problems)
	}
	tests := []struct {
		key, ns, name, want string
	}{
		{StuckScheduling, "default", "stuck-1", "default/stuck-*"},
		{StuckScheduling, "default", "free-1", ""},
		{StuckScheduling, "other", "exact", "other/exact"},
		{StuckScheduling, "other", "stuck-1", ""},
		{NoIP, "default", "noip", "default/noip"},
		{NoIP, "default", "stuck-1", ""},
		{IPv6Only, "default", "v6-a", "default/v6-*"},
		{IPv6Only, "default", "noip", ""},
		{"unknown", "default", "noip", ""},
	}
	for _, tt := range tests {
		if got := f.Match(tt.key, tt.ns, tt.name); got != tt.want {
			t.Errorf("match(%s, %s/%s) = %q, want %q", tt.key, tt.ns, tt.name, got, tt.want)
		}
	}
}

func TestLoadBalancerFaults(t *testing.T) {
	f := ParsePatterns(map[string]string{
		ExhaustPool:     "pool-a\nguest-*",
		DelayAllocation: "default/slow-* 5s\nother/* 1m\nbad-line\ndefault/x notaduration\ndefault/y -1s",
	})
	if len(f.Problems()) != 3 {
		t.Fatalf("problems = %v, want three (no duration, bad duration, negative)", f.Problems())
	}
	for _, tt := range []struct {
		pool, want string
	}{{"pool-a", "pool-a"}, {"guest-b", "guest-*"}, {"pool-b", ""}} {
		if got := f.MatchName(ExhaustPool, tt.pool); got != tt.want {
			t.Errorf("exhaust %s = %q, want %q", tt.pool, got, tt.want)
		}
	}
	for _, tt := range []struct {
		ns, name string
		want     time.Duration
	}{{"default", "slow-1", 5 * time.Second}, {"other", "lb", time.Minute}, {"default", "fast", 0}} {
		if got := f.AllocationDelay(tt.ns, tt.name); got != tt.want {
			t.Errorf("delay %s/%s = %s, want %s", tt.ns, tt.name, got, tt.want)
		}
	}
}
