package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// What Rancher waits for is rancher-machine's exit, not Create's return.
// A `rancher-machine create` (or `rm --update-config`) starts two plugin
// processes: one only to read the driver's flags (its client names the
// machine "temp-driver-loader"), then the machine's own. At the end it
// closes the machine's plugin, then the flag reader, each with a Close
// call whose reply it waits for, and exits; it does not wait for the
// plugins to exit (rancher/machine v0.15.0-rancher134,
// libmachine/drivers/rpc/client_driver.go close() and
// commands/commands.go withDriverFlags, runCommand).

// flagLoaderName is the machine name rancher-machine gives the plugin it
// starts only to read the driver's flags.
const flagLoaderName = "temp-driver-loader"

// closeCall is the end of rancher-machine's debug line logged just before
// it calls a plugin's Close: "(<machine name>) Calling .Close".
const closeCall = ") Calling .Close"

// closeLost is the start of rancher-machine's debug line when a Close
// call got no reply: the plugin's exit ended the connection first, and
// rancher-machine saw that only once the kernel had torn the plugin down.
const closeLost = "Failed to make call to close driver server"

// pluginsPerRun is how many plugin processes one create or rm starts.
const pluginsPerRun = 2

// runEnd is what the benchmark saw of one rancher-machine run's end.
type runEnd struct {
	exited  time.Time            // rancher-machine exited (seen before it was reaped)
	cpu     time.Duration        // its own CPU, user+system (/proc/PID/stat)
	plugins []*pluginRun         // the plugin processes it started, in start order
	reaped  time.Duration        // CPU of the plugins rancher-machine reaped itself
	closes  map[string]time.Time // machine name -> its "Calling .Close" line
	lost    int                  // Close calls without a reply (closeLost lines)
}

// pluginRun is one plugin process of a run.
type pluginRun struct {
	pid    int
	fd     int // pidfd
	start  int // start time, clock ticks after boot (field 22 of its stat)
	exited time.Time
	done   chan struct{} // closed once exited is set
	cpu    time.Duration // user+system from its reaping; 0 when rancher-machine reaped it
}

// pluginCPU is the CPU of all the run's plugin processes.
func (e *runEnd) pluginCPU() time.Duration {
	total := e.reaped
	for _, p := range e.plugins {
		total += p.cpu
	}
	return total
}

// closeToExit is, per plugin, the time from rancher-machine calling its
// Close to its exit: the machine's plugin (started second) and the flag
// reader (started first).
func (e *runEnd) closeToExit(machine string) ([]time.Duration, error) {
	if len(e.plugins) != pluginsPerRun {
		return nil, fmt.Errorf("rancher-machine started %d plugin processes, want %d", len(e.plugins), pluginsPerRun)
	}
	var out []time.Duration
	for i, name := range []string{flagLoaderName, machine} {
		at, ok := e.closes[name]
		if !ok {
			return nil, fmt.Errorf("no line %q for %s", "("+name+closeCall, name)
		}
		out = append(out, e.plugins[i].exited.Sub(at))
	}
	return out, nil
}

// events are the exits seen, for a timeline.
func (e *runEnd) events() []event {
	out := []event{{e.exited, "[bench] rancher-machine exited"}}
	for i, p := range e.plugins {
		role := "the machine's"
		if i == 0 {
			role = "the flag reader"
		}
		out = append(out, event{p.exited, fmt.Sprintf("[bench] plugin process %d (%s) exited", p.pid, role)})
	}
	return out
}

// noteClose records a "Calling .Close" line read at the given time, or a
// Close that got no reply.
func (e *runEnd) noteClose(at time.Time, line string) {
	if strings.Contains(line, closeLost) {
		e.lost++
		return
	}
	i := strings.Index(line, closeCall)
	j := strings.LastIndexByte(line[:max(i, 0)], '(')
	if i < 0 || j < 0 {
		return
	}
	e.closes[line[j+1:i]] = at
}

// tracker finds the plugin processes a rancher-machine process starts,
// polling its children, and records when each exits.
type tracker struct {
	pid  int
	end  *runEnd
	stop chan struct{}
	done chan struct{}
}

// trackInterval is how often a rancher-machine's children are listed
// until both its plugins are found (each lives for most of the command).
const trackInterval = 10 * time.Millisecond

// track starts tracking process pid; what it finds goes into end.
func track(pid int, end *runEnd) *tracker {
	t := &tracker{pid: pid, end: end, stop: make(chan struct{}), done: make(chan struct{})}
	go t.poll()
	return t
}

func (t *tracker) poll() {
	defer close(t.done)
	tick := time.NewTicker(trackInterval)
	defer tick.Stop()
	seen := map[int]bool{}
	for len(seen) < pluginsPerRun {
		for _, pid := range children(t.pid) {
			if seen[pid] {
				continue
			}
			// A child not yet past its exec is tried again.
			if p := t.adopt(pid); p != nil {
				seen[pid] = true
				t.end.plugins = append(t.end.plugins, p)
			}
		}
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
	}
}

// adopt opens a pidfd on a child of the tracked process and records when
// it exits; nil when it is not a plugin (or is gone already).
func (t *tracker) adopt(pid int) *pluginRun {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	// The pid could have been reaped and reused between the listing and
	// the pidfd: the process must still be the tracked one's child.
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	exe, _ := os.Readlink(filepath.Join(proc, "exe"))
	stat := statFields(filepath.Join(proc, "stat"))
	if statField(stat, 4) != t.pid || filepath.Base(exe) != driverBinary {
		_ = unix.Close(fd)
		return nil
	}
	p := &pluginRun{pid: pid, fd: fd, start: statField(stat, 22), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		// A pidfd becomes readable once every thread of its process is gone.
		for {
			if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		p.exited = time.Now()
	}()
	return p
}

// finish waits for the tracked rancher-machine to exit, reads its CPU
// before it is reaped (reap reaps it), then waits for each plugin to exit
// and reaps the ones left to this process (a child subreaper, see
// becomeSubreaper): their CPU is their own; the CPU of those
// rancher-machine reaped is in its children's CPU.
func (t *tracker) finish(ctx context.Context, reap func() error) error {
	var info unix.Siginfo
	err := retryEINTR(func() error { return unix.Waitid(unix.P_PID, t.pid, &info, unix.WEXITED|unix.WNOWAIT, nil) })
	exited := time.Now()
	own, reaped := statTicks(filepath.Join("/proc", strconv.Itoa(t.pid), "stat"))
	close(t.stop)
	<-t.done
	err = errors.Join(err, reap())
	e := t.end
	e.exited = exited
	e.cpu = ticks(own)
	e.reaped = ticks(reaped)
	for _, p := range e.plugins {
		err = errors.Join(err, p.reap(ctx))
	}
	slices.SortFunc(e.plugins, func(a, b *pluginRun) int { return cmp.Or(a.start-b.start, a.pid-b.pid) })
	return err
}

// reap waits for the plugin to exit and, when it was left to this
// process, reaps it and takes its CPU.
func (p *pluginRun) reap(ctx context.Context) error {
	defer unix.Close(p.fd) //nolint:errcheck // pidfd
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("plugin %d: %w", p.pid, ctx.Err())
	}
	var info unix.Siginfo
	var ru unix.Rusage
	err := retryEINTR(func() error { return unix.Waitid(unix.P_PIDFD, p.fd, &info, unix.WEXITED, &ru) })
	if errors.Is(err, unix.ECHILD) {
		return nil // rancher-machine reaped it
	}
	if err != nil {
		return fmt.Errorf("reap plugin %d: %w", p.pid, err)
	}
	p.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return nil
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// becomeSubreaper makes this process the reaper of its descendants
// whose parent exits: the plugins rancher-machine leaves behind, so that
// their CPU can be read when they are reaped.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a child subreaper: %w", err)
	}
	return nil
}

// children lists the child processes of pid (every thread's).
func children(pid int) []int {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, _ := os.ReadDir(dir)
	var out []int
	for _, task := range tasks {
		data, _ := os.ReadFile(filepath.Join(dir, task.Name(), "children"))
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func ticks(n int) time.Duration { return time.Duration(n) * time.Second / clockTicks }
