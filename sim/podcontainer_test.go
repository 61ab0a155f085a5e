package sim

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"
)

// TestPodContainerRestartsAsTheKubeletDoes: a container that exits is
// started again at once, the next time only after the back-off, and never
// after stop.
func TestPodContainerRestartsAsTheKubeletDoes(t *testing.T) {
	logDir := t.TempDir()
	var starts atomic.Int32
	c, err := runPodContainer("crasher", func() (*process, error) {
		starts.Add(1)
		return startCommand(logDir, "crasher", exec.Command("/bin/sh", "-c", "exit 3"), 0)
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for starts.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // a count changing; nothing to watch
	}
	if n := starts.Load(); n != 2 {
		t.Fatalf("started %d times, want a second start at once after the first exit", n)
	}
	<-c.current().done
	time.Sleep(time.Second) // well inside the 10 s back-off
	if n := starts.Load(); n != 2 {
		t.Errorf("started %d times within a second of the second exit, want the kubelet's %s back-off", n, crashLoopInitial)
	}
	c.stop(time.Second)
	if n := starts.Load(); n != 2 {
		t.Errorf("started %d times after stop", n)
	}
}

// TestPodContainerWaitRestarted: waitRestarted returns once the process
// that exited was replaced, and fails when the container is stopped
// instead.
func TestPodContainerWaitRestarted(t *testing.T) {
	logDir := t.TempDir()
	c, err := runPodContainer("once", func() (*process, error) {
		return startCommand(logDir, "once", exec.Command("/bin/sh", "-c", "sleep 0.2"), 0)
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	first := c.current()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.waitRestarted(ctx, first); err != nil {
		t.Fatalf("first exit: %v", err)
	}
	if c.current() == first {
		t.Fatal("waitRestarted returned with the exited process still current")
	}
	second := c.current()
	c.stop(time.Second)
	if err := c.waitRestarted(ctx, second); err == nil {
		t.Error("waitRestarted of a stopped container succeeded")
	}
}
