package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/kubevirt"
)

// process is one child of the simulator (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, virt-api, virt-controller). Children die with the simulator even if it is
// killed, through the parent-death signal.
type process struct {
	name string
	log  string // its log file
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProcess(binDir, logDir, name string, args ...string) (*process, error) {
	path := filepath.Join(binDir, name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("start %s: %w (run `make tools` to build it)", name, err)
	}
	return startCommand(logDir, name, exec.Command(path, args...), 0)
}

// startInPod starts bin/name as a Pod's container would find itself: in a
// mount namespace of its own with saDir's files (token, ca.crt,
// namespace) at the ServiceAccount path, and with env (NAME=value, the
// container's env) besides the simulator's environment. This binary
// re-executes itself as kubevirt.ExecCommand to set that up, then becomes
// the process.
func startInPod(binDir, logDir, name, saDir string, env []string, args ...string) (*process, error) {
	path := filepath.Join(binDir, name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("start %s: %w (run `make tools` to build it)", name, err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(self, kubevirt.ExecArgs(saDir, append([]string{path}, args...))...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	return startCommand(logDir, name, cmd, syscall.CLONE_NEWNS)
}

// startCommand starts cmd with its output in logDir/name.log, in a process
// group of its own and with the parent-death signal, in new namespaces
// cloneflags.
func startCommand(logDir, name string, cmd *exec.Cmd, cloneflags uintptr) (*process, error) {
	logFile, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true, Cloneflags: cloneflags}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, log: logFile.Name(), cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, fmt.Errorf("%s exited: %w (its log %s ends: %s)", p.name, p.err, p.log, logTail(p.log))
	default:
		return false, nil
	}
}

// ended reports whether the process has ended, without reading its log.
func (p *process) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logTail is the last lines of a child's log, for an exit's error: the
// state dir, and the log with it, is often gone by the time anyone looks.
func logTail(path string) string {
	const size, lines, width = 4 << 10, 3, 500
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	buf := make([]byte, size)
	var off int64
	if st, err := f.Stat(); err == nil && st.Size() > size {
		off = st.Size() - size
	}
	n, _ := f.ReadAt(buf, off)
	all := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	if off > 0 && len(all) > 1 {
		all = all[1:] // the first line is cut
	}
	all = all[max(0, len(all)-lines):]
	for i, l := range all {
		if len(l) > width {
			all[i] = l[:width] + "..."
		}
	}
	return strings.Join(all, " | ")
}

// stop asks the process to end and kills it if it has not within grace.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	if p.ended() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// waitUntil calls check every interval until it succeeds, the process exits
// or ctx ends. It is for process readiness endpoints, which have no watch.
func (p *process) waitUntil(ctx context.Context, what string, check func(context.Context) error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		if done, err := p.exited(); done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %w)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// freePorts reserves n distinct loopback ports and releases them for the
// children to bind. The ports lie outside the kernel's ephemeral range
// (net.ipv4.ip_local_port_range): a port from that range can be taken,
// between the reservation and the child's bind, as the source port of any
// outgoing connection on the machine, and a long watch holds it for
// minutes, so the child would fail to listen at every restart.
func freePorts(n int) ([]int, error) {
	lo, hi := ephemeralRange()
	candidates := portsOutside(lo, hi)
	if len(candidates) < minCandidates {
		return kernelPorts(n)
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for _, i := range rand.Perm(len(candidates)) {
		if len(ports) == n {
			break
		}
		l, err := net.Listen("tcp", hostPort(candidates[i]))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, candidates[i])
	}
	if len(ports) < n {
		return nil, fmt.Errorf("reserve %d loopback ports outside the ephemeral range %d-%d: only %d free", n, lo, hi, len(ports))
	}
	return ports, nil
}

// kernelPorts lets the kernel choose n ports: the fallback for a machine
// whose ephemeral range leaves too few others.
func kernelPorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// minCandidates is how many ports outside the ephemeral range make
// choosing among them worth it.
const minCandidates = 1000

// Ports the simulator's children listen on come from here: above the
// registered services most machines run, below 65536.
const (
	firstChildPort = 20000
	lastChildPort  = 65535
)

// ephemeralRange is the kernel's range for outgoing connections' source
// ports, or Linux's default when it cannot be read.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l > h {
		return lo, hi
	}
	return l, h
}

// portsOutside lists the child ports not in [lo, hi].
func portsOutside(lo, hi int) []int {
	var ports []int
	for p := firstChildPort; p <= lastChildPort; p++ {
		if p < lo || p > hi {
			ports = append(ports, p)
		}
	}
	return ports
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

var errNotReady = errors.New("not ready")
