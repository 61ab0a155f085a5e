package simtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// PluginProcess is a running process of this checkout's
// bin/docker-machine-driver-harvester.
type PluginProcess struct {
	Pid    int
	Parent int    // its parent's pid now (1 or a subreaper once its rancher-machine exited)
	Store  string // its MACHINE_STORAGE_PATH
	Run    string // its RunEnv: the test binary whose command started it
}

// RunEnv marks every process a test binary starts, through the
// environment its rancher-machine commands and their plugins inherit:
// "go test ./..." runs packages side by side, and a package's own check
// must not count another package's plugins that are still at work.
const RunEnv = "SIMTEST_RUN"

// MarkRun sets RunEnv, to this process's pid, for the processes this
// test binary will start.
func MarkRun() error { return os.Setenv(RunEnv, strconv.Itoa(os.Getpid())) }

// ThisRun lists the plugin processes started by this test binary's
// commands (see MarkRun); none when MarkRun was not called.
func ThisRun() ([]PluginProcess, error) {
	run := os.Getenv(RunEnv)
	if run == "" {
		return nil, nil
	}
	all, err := Plugins("")
	return ofRun(all, run), err
}

// ofRun keeps the processes whose RunEnv is run.
func ofRun(procs []PluginProcess, run string) []PluginProcess {
	var mine []PluginProcess
	for _, p := range procs {
		if p.Run == run {
			mine = append(mine, p)
		}
	}
	return mine
}

func (p PluginProcess) String() string {
	return fmt.Sprintf("pid %d (parent %d, store %s)", p.Pid, p.Parent, p.Store)
}

// Plugins lists the running plugin processes of this checkout whose
// MACHINE_STORAGE_PATH is store ("" for every store).
func Plugins(store string) ([]PluginProcess, error) {
	bin, err := Bin("docker-machine-driver-harvester")
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []PluginProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || exe != bin {
			continue
		}
		p, ok := readPlugin(pid)
		if ok && (store == "" || p.Store == store) {
			out = append(out, p)
		}
	}
	return out, nil
}

// readPlugin reads a process's parent and store; false when it is gone.
func readPlugin(pid int) (PluginProcess, bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	env, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		return PluginProcess{}, false
	}
	p := PluginProcess{Pid: pid}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("MACHINE_STORAGE_PATH=")); ok {
			p.Store = string(v)
		}
		if v, ok := bytes.CutPrefix(kv, []byte(RunEnv+"=")); ok {
			p.Run = string(v)
		}
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return PluginProcess{}, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
		if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
			p.Parent, _ = strconv.Atoi(f[1])
		}
	}
	return p, true
}

// PluginsLeft is the check after a test: call it once every rancher-machine
// command of store has returned. A plugin process ends with the
// rancher-machine command that started it, so any still running is a bug;
// each one is given until ctx ends to exit (waiting on its exit, not
// polling) and those still running then are returned.
func PluginsLeft(ctx context.Context, store string) ([]PluginProcess, error) {
	procs, err := Plugins(store)
	if err != nil {
		return nil, err
	}
	return waitLeft(ctx, procs)
}

// RunPluginsLeft is PluginsLeft for every plugin this test binary's
// commands started (see MarkRun), whatever their store.
func RunPluginsLeft(ctx context.Context) ([]PluginProcess, error) {
	procs, err := ThisRun()
	if err != nil {
		return nil, err
	}
	return waitLeft(ctx, procs)
}

// waitLeft gives each process until ctx ends to exit and returns those
// still running then.
func waitLeft(ctx context.Context, procs []PluginProcess) ([]PluginProcess, error) {
	var left []PluginProcess
	for _, p := range procs {
		exited, err := waitExit(ctx, p.Pid)
		if err != nil {
			return nil, err
		}
		if !exited {
			if cur, ok := readPlugin(p.Pid); ok {
				left = append(left, cur)
			}
		}
	}
	return left, nil
}

// waitExit waits until process pid exits or ctx ends; true when it exited
// (or was already gone).
func waitExit(ctx context.Context, pid int) (bool, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("watch process %d: %w", pid, err)
	}
	defer unix.Close(fd) //nolint:errcheck // read-only descriptor
	for {
		timeout := -1
		if d, ok := ctx.Deadline(); ok {
			timeout = max(0, int(time.Until(d).Milliseconds()))
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, timeout)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return false, fmt.Errorf("watch process %d: %w", pid, err)
		case n > 0:
			return true, nil
		case ctx.Err() != nil || timeout == 0:
			return false, nil
		}
	}
}

// pluginExitBound bounds the wait for plugin processes to exit in
// NoPluginLeft: a plugin exits as soon as its rancher-machine does, so the
// bound is only reached by a plugin that outlives it.
const pluginExitBound = 30 * time.Second

// NoPluginLeft fails t for each plugin process of store still running
// after the test's rancher-machine commands returned (see PluginsLeft).
// Register it with t.Cleanup after the cleanups that run rancher-machine
// (cleanups run last-registered first).
func NoPluginLeft(t testing.TB, store string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pluginExitBound)
	defer cancel()
	left, err := PluginsLeft(ctx, store)
	if err != nil {
		t.Errorf("plugin processes of %s: %v", store, err)
		return
	}
	for _, p := range left {
		t.Errorf("plugin process %s outlived its rancher-machine command by more than %s", p, pluginExitBound)
		if proc, err := os.FindProcess(p.Pid); err == nil {
			_ = proc.Kill()
		}
	}
}
