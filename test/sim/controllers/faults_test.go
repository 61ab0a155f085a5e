package controllers

import "testing"

func TestFaultsMatch(t *testing.T) {
	f := parseFaults(map[string]string{
		FaultStuckScheduling: "default/stuck-*\n\n# comment\nother/exact\n[bad",
		FaultNoIP:            " default/noip ",
	})
	if len(f.problems) != 1 {
		t.Fatalf("problems = %v, want one for the bad pattern", f.problems)
	}
	tests := []struct {
		key, ns, name, want string
	}{
		{FaultStuckScheduling, "default", "stuck-1", "default/stuck-*"},
		{FaultStuckScheduling, "default", "free-1", ""},
		{FaultStuckScheduling, "other", "exact", "other/exact"},
		{FaultStuckScheduling, "other", "stuck-1", ""},
		{FaultNoIP, "default", "noip", "default/noip"},
		{FaultNoIP, "default", "stuck-1", ""},
		{"unknown", "default", "noip", ""},
	}
	for _, tt := range tests {
		if got := f.match(tt.key, tt.ns, tt.name); got != tt.want {
			t.Errorf("match(%s, %s/%s) = %q, want %q", tt.key, tt.ns, tt.name, got, tt.want)
		}
	}
}
