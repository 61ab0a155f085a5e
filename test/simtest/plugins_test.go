package simtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWaitExit: a process that exits is seen exiting; one that does not is
// reported running when the context ends.
func TestWaitExit(t *testing.T) {
	quick := exec.Command("sleep", "0.1")
	slow := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{quick, slow} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _ = slow.Process.Kill(); _ = slow.Wait() }()
	reaped := make(chan struct{})
	go func() { _ = quick.Wait(); close(reaped) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if exited, err := waitExit(ctx, quick.Process.Pid); err != nil || !exited {
		t.Errorf("sleep 0.1: exited %v, %v", exited, err)
	}
	<-reaped
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	if exited, err := waitExit(short, slow.Process.Pid); err != nil || exited {
		t.Errorf("sleep 60: exited %v, %v", exited, err)
	}
	if exited, err := waitExit(ctx, quick.Process.Pid); err != nil || !exited {
		t.Errorf("a reaped process: exited %v, %v", exited, err)
	}
}

// TestReadPlugin reads this process's parent and store.
func TestReadPlugin(t *testing.T) {
	t.Setenv("MACHINE_STORAGE_PATH", "/tmp/x") // not in this process's initial environment: not seen
	p, ok := readPlugin(os.Getpid())
	if !ok || p.Parent != os.Getppid() || p.Pid != os.Getpid() {
		t.Fatalf("got %+v %v, want parent %d", p, ok, os.Getppid())
	}
	if _, ok := readPlugin(1 << 30); ok {
		t.Error("a pid that does not exist was read")
	}
}

// TestReadPluginRun: a child's store and run marker are read from its
// environment, and only the processes of a run are kept as its own.
func TestReadPluginRun(t *testing.T) {
	child := exec.Command("sleep", "60")
	child.Env = append(os.Environ(), "MACHINE_STORAGE_PATH=/tmp/store-a", RunEnv+"=4242")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	// Until the child has exec'd, /proc shows the forked test binary's
	// environment: read again until the exec is done (Start returns before).
	var p PluginProcess
	var ok bool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, ok = readPlugin(child.Process.Pid)
		if ok && p.Run == "4242" || time.Now().After(deadline) {
			break
		}
	}
	if !ok || p.Store != "/tmp/store-a" || p.Run != "4242" || p.Parent != os.Getpid() {
		t.Fatalf("got %+v %v", p, ok)
	}
	other := PluginProcess{Pid: 7, Run: "99"}
	unmarked := PluginProcess{Pid: 8}
	got := ofRun([]PluginProcess{other, p, unmarked}, "4242")
	if len(got) != 1 || got[0].Pid != p.Pid {
		t.Errorf("run 4242 keeps %+v, want only pid %d", got, p.Pid)
	}
}

// TestCPUHog: the hog burns CPU while it runs and stops by itself at its
// limit. Its limit is wall time, so on a loaded machine (make test runs five
// go test processes beside other simulators) it gets only its share of the
// cores: it must burn a twentieth of its limit, which a process that only
// sleeps never does (a share of 2 cores among 40 runnable threads is more).
func TestCPUHog(t *testing.T) {
	const limit = time.Second
	before := cpuTime(t)
	stop := CPUHog(context.Background(), limit)
	time.Sleep(2 * limit)
	during := cpuTime(t) - before
	if during < limit/20 {
		t.Errorf("the hog used %s of CPU in %s", during, 2*limit)
	}
	// It stopped by itself: the process uses (nearly) no CPU any more.
	mark := cpuTime(t)
	time.Sleep(limit)
	if after := cpuTime(t) - mark; after > limit/4 {
		t.Errorf("still %s of CPU used in the %s after the hog's limit", after, limit)
	}
	stop()
}

func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestProgress: steps keep the context alive past the window; without them
// it ends, saying what happened last.
func TestProgress(t *testing.T) {
	const window = time.Second
	p, ctx := NewProgress(context.Background(), window)
	defer p.Stop()
	for range 6 {
		time.Sleep(window / 20)
		p.Step("tick")
	}
	if ctx.Err() != nil {
		t.Fatalf("ended despite progress: %v", context.Cause(ctx))
	}
	<-ctx.Done()
	if cause := context.Cause(ctx).Error(); !strings.Contains(cause, "no progress for 1s (6 steps; the last") || !strings.Contains(cause, "tick") {
		t.Errorf("cause %q", cause)
	}
}
