package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/kubevirt"
)

// process is one child of the simulator (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, virt-api, virt-controller). Children die with the simulator even if it is
// killed, through the parent-death signal.
type process struct {
	name string
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
// namespace) at the ServiceAccount path. This binary re-executes itself
// as kubevirt.ExecCommand to set that up, then becomes the process.
func startInPod(binDir, logDir, name, saDir string, args ...string) (*process, error) {
	path := filepath.Join(binDir, name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("start %s: %w (run `make tools` to build it)", name, err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(self, kubevirt.ExecArgs(saDir, append([]string{path}, args...))...)
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
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
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
		return true, fmt.Errorf("%s exited: %w (see its log in the state dir's logs/)", p.name, p.err)
	default:
		return false, nil
	}
}

// stop asks the process to end and kills it if it has not within grace.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	if done, _ := p.exited(); done {
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
// children to bind.
func freePorts(n int) ([]int, error) {
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

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

var errNotReady = errors.New("not ready")
