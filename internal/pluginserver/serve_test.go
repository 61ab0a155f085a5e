package pluginserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rancher/machine/libmachine/drivers"
)

// TestRun: the plugin ends with 0 when closed, with 1 when its parent
// exits or stays silent for the timeout, and heartbeats keep it alive.
func TestRun(t *testing.T) {
	closedCh := func() chan struct{} {
		c := make(chan struct{})
		close(c)
		return c
	}
	t.Run("closed", func(t *testing.T) {
		if got := run(events{closed: closedCh()}, time.Hour); got != 0 {
			t.Errorf("exit %d, want 0", got)
		}
	})
	t.Run("parent gone", func(t *testing.T) {
		if got := run(events{parentGone: closedCh()}, time.Hour); got != 1 {
			t.Errorf("exit %d, want 1", got)
		}
	})
	t.Run("heartbeats, then silence", func(t *testing.T) {
		heartbeat := make(chan bool)
		done := make(chan int, 1)
		// Generous against a loaded machine: a sleep overshooting by most
		// of the timeout would end run between two heartbeats.
		const timeout = 500 * time.Millisecond
		go func() { done <- run(events{heartbeat: heartbeat}, timeout) }()
		// Each heartbeat is sent (unbuffered) only while run listens, so
		// run is alive after 10 heartbeats spread over 2 timeouts; should
		// it end early, the test fails instead of blocking.
		for range 10 {
			select {
			case heartbeat <- true:
			case got := <-done:
				t.Fatalf("run ended (exit %d) while heartbeats were coming", got)
			}
			time.Sleep(timeout / 5)
		}
		if got := <-done; got != 1 {
			t.Errorf("exit %d after silence, want 1", got)
		}
	})
}

// helperEnv selects the role of this test binary when re-executed.
const helperEnv = "PLUGINSERVER_TEST_ROLE"

// TestMain lets the test binary play the parent (which starts a child
// and then waits to be killed), the child (which watches its parent and
// exits when it is gone), and a plugin serving a driver.
func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "parent":
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), helperEnv+"=child")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Println("start child:", err)
			os.Exit(2)
		}
		fmt.Println("child", child.Process.Pid)
		select {}
	case "plugin":
		Serve(drivers.NewDriverNotSupported("test", "m1", os.TempDir()))
	case "child":
		gone, err := watchParent()
		if err != nil {
			fmt.Println("watch:", err)
			os.Exit(2)
		}
		fmt.Println("watching")
		<-gone
		os.Exit(run(events{parentGone: gone}, time.Hour))
	}
	os.Exit(m.Run())
}

// TestChildEndsWithParent: a process watching its parent exits when the
// parent is killed (no Close, no heartbeat timeout: the watch alone).
func TestChildEndsWithParent(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), helperEnv+"=parent")
	parent.Stdout, parent.Stderr = w, w
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The parent's "child PID" and the child's "watching" share the pipe
	// and come in either order.
	lines := bufio.NewReader(r)
	childPid, watching := 0, false
	for range 2 {
		line := readLine(t, lines)
		if line == "watching" {
			watching = true
			continue
		}
		pid, ok := strings.CutPrefix(line, "child ")
		if !ok {
			t.Fatalf("helper: %s", line)
		}
		if childPid, err = strconv.Atoi(pid); err != nil {
			t.Fatalf("child pid %q: %v", pid, err)
		}
	}
	if childPid == 0 || !watching {
		t.Fatalf("want the child's pid and its watching line; pid %d, watching %v", childPid, watching)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	// Every writer of the pipe is gone once the child has exited. The
	// deadline only bounds a failure: the child has no heartbeat timeout.
	if err := r.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		_ = syscallKill(childPid)
		t.Fatalf("child %d still running after its parent was killed: %v (output %q)", childPid, err, rest)
	}
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if line == "" {
		t.Fatal("helper output ended early")
	}
	return strings.TrimSpace(line)
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
