package simtest

import (
	"os"
	"path/filepath"
	"testing"
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
