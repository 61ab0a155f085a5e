package fault

import "testing"

func TestFaultsMatch(t *testing.T) {
	f := ParsePatterns(map[string]string{
		StuckScheduling: "default/stuck-*\n\n# comment\nother/exact\n[bad",
		NoIP:            " default/noip ",
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
		{"unknown", "default", "noip", ""},
	}
	for _, tt := range tests {
		if got := f.Match(tt.key, tt.ns, tt.name); got != tt.want {
			t.Errorf("match(%s, %s/%s) = %q, want %q", tt.key, tt.ns, tt.name, got, tt.want)
		}
	}
}
