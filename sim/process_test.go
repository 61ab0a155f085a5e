package sim

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange()
	ports, err := freePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d reserved twice", p)
		}
		seen[p] = true
		if len(portsOutside(lo, hi)) >= minCandidates && p >= lo && p <= hi {
			t.Errorf("port %d is in the ephemeral range %d-%d", p, lo, hi)
		}
		l, err := net.Listen("tcp", hostPort(p))
		if err != nil {
			t.Errorf("port %d was not released: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestPortsOutside(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, want int
	}{
		{32768, 60999, (32767 - firstChildPort + 1) + (lastChildPort - 61000 + 1)},
		{1024, 65535, 0},
		{20000, 30000, lastChildPort - 30001 + 1},
	} {
		got := portsOutside(tc.lo, tc.hi)
		if len(got) != tc.want {
			t.Errorf("portsOutside(%d, %d): %d ports, want %d", tc.lo, tc.hi, len(got), tc.want)
		}
		for _, p := range got {
			if p >= tc.lo && p <= tc.hi {
				t.Errorf("portsOutside(%d, %d) has %d", tc.lo, tc.hi, p)
				break
			}
		}
	}
}

func TestExitErrorCarriesTheLogTail(t *testing.T) {
	dir := t.TempDir()
	p, err := startCommand(dir, "crasher", exec.Command("sh", "-c", "for i in 1 2 3 4 5; do echo line $i; done; exit 3"), 0)
	if err != nil {
		t.Fatal(err)
	}
	<-p.done
	done, err := p.exited()
	if !done || err == nil {
		t.Fatalf("exited() = %v, %v; want done with an error", done, err)
	}
	msg := err.Error()
	for _, want := range []string{"crasher exited", "exit status 3", "line 3 | line 4 | line 5", filepath.Join(dir, "crasher.log")} {
		if !strings.Contains(msg, want) {
			t.Errorf("exit error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "line 2") {
		t.Errorf("exit error %q has more than the last three lines", msg)
	}
}

func TestLogTailOfALongLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long.log")
	long := strings.Repeat("x", 9000) + "\n" + strings.Repeat("y", 600) + "\nlast\n"
	if err := os.WriteFile(path, []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	got := logTail(path)
	want := strings.Repeat("y", 500) + "... | last"
	if got != want {
		t.Errorf("logTail = %q, want %q", got, want)
	}
}
