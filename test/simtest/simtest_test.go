package simtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWarnings: only the log's WARN and ERROR lines, the last n of them.
func TestWarnings(t *testing.T) {
	log := filepath.Join(t.TempDir(), "harvester-sim.log")
	lines := "time=1 level=INFO msg=a\n" +
		"time=2 level=WARN msg=\"exited; started again\" in=10s\n" +
		"time=3 level=INFO msg=\"level=WARN quoted\"\n" +
		"time=4 level=ERROR msg=b\n" +
		"time=5 level=WARN msg=c\n"
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Sim{LogPath: log}
	for n, want := range map[int]string{
		1: "time=5 level=WARN msg=c",
		3: "time=2 level=WARN msg=\"exited; started again\" in=10s\ntime=4 level=ERROR msg=b\ntime=5 level=WARN msg=c",
		9: "time=2 level=WARN msg=\"exited; started again\" in=10s\ntime=4 level=ERROR msg=b\ntime=5 level=WARN msg=c",
	} {
		if got := s.Warnings(n); got != want {
			t.Errorf("Warnings(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestStartArgsBoundTheStartByTheDeadline: a simulator a test starts gives
// up when the test's context would, not after the simulator's default;
// an explicit --start-timeout, or no deadline, leaves the flags alone.
func TestStartArgsBoundTheStartByTheDeadline(t *testing.T) {
	withDeadline, cancel := context.WithTimeout(context.Background(), 5*time.Minute+500*time.Millisecond)
	defer cancel()
	spent, cancelSpent := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelSpent()
	cases := []struct {
		name string
		ctx  context.Context
		args []string
		want []string
	}{
		{"deadline", withDeadline, []string{"--guest-clusters"}, []string{"--guest-clusters", "--start-timeout=5m0s"}},
		{"deadline passed", spent, nil, []string{"--start-timeout=1s"}},
		{"no deadline", context.Background(), []string{"--hosts=3"}, []string{"--hosts=3"}},
		{"set by the caller", withDeadline, []string{"--start-timeout=6m0s"}, []string{"--start-timeout=6m0s"}},
		{"set by the caller, one dash", withDeadline, []string{"-start-timeout", "1m"}, []string{"-start-timeout", "1m"}},
	}
	for _, c := range cases {
		if got := startArgs(c.ctx, c.args); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
