// Package simtest starts bin/harvester-sim for end-to-end tests.
package simtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

const modulePath = "github.com/harvester-kit/harvester-machine"

// Options configure a simulator started for a test package.
type Options struct {
	Args []string // extra harvester-sim flags, e.g. --boot-delay=0s
}

// Sim is a running simulated Harvester.
type Sim struct {
	Dir        string // state directory
	Kubeconfig string // admin kubeconfig path
	LogPath    string // the simulator's own log
	root       string
	cmd        *exec.Cmd // nil when attached: another process owns it
	pid        int
	done       chan struct{}
	waitErr    error
}

// AttachEnv names the running simulator a test package attaches to,
// instead of starting its own: the Root of one that simtest.Start made in
// another process (the chain runner, test/harness/e2e-chain).
const AttachEnv = "HARVESTER_E2E_SIM"

// Root is the directory that holds the simulator's state and log, to give
// another process in AttachEnv.
func (s *Sim) Root() string { return s.root }

// Attach is the running simulator that another process started under
// root (Start's layout: state/ and harvester-sim.log). Stop leaves it
// running: its owner stops it.
func Attach(root string) (*Sim, error) {
	s := &Sim{root: root, Dir: filepath.Join(root, "state"), LogPath: filepath.Join(root, "harvester-sim.log")}
	s.Kubeconfig = filepath.Join(s.Dir, "kubeconfig")
	if _, err := os.Stat(filepath.Join(s.Dir, "ready")); err != nil {
		return nil, fmt.Errorf("attach to the simulator in %s: not ready: %w", root, err)
	}
	raw, err := os.ReadFile(filepath.Join(s.Dir, "sim.pid"))
	if err == nil {
		s.pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
	}
	if err != nil {
		return nil, fmt.Errorf("attach to the simulator in %s: its pid: %w", root, err)
	}
	if err := syscall.Kill(s.pid, 0); err != nil {
		return nil, fmt.Errorf("attach to the simulator in %s: pid %d: %w", root, s.pid, err)
	}
	return s, nil
}

// Attached reports whether another process owns the simulator.
func (s *Sim) Attached() bool { return s.cmd == nil }

// RepoRoot finds the repository root by walking up to this module's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repository root (go.mod of %s) not found above the working directory", modulePath)
		}
		dir = parent
	}
}

// Bin is the absolute path of bin/<name>; a missing binary is an error that
// says how to build it.
func Bin(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "bin", name)
	info, err := os.Stat(path)
	if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("bin/%s is missing: run `make build tools` first", name)
	}
	return path, nil
}

// Start runs bin/harvester-sim in a fresh temporary state directory and
// returns once it has written its ready file. Unless opts.Args set
// --start-timeout, the simulator's bound on its start is ctx's deadline:
// the caller's (its own default, 2 minutes, is too short for a
// simulator that a test starts while make test loads both cores).
func Start(ctx context.Context, opts Options) (*Sim, error) {
	bin, err := Bin("harvester-sim")
	if err != nil {
		return nil, err
	}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := Bin(tool); err != nil {
			return nil, err
		}
	}
	root, err := os.MkdirTemp("", "harvester-sim-")
	if err != nil {
		return nil, err
	}
	s := &Sim{root: root, Dir: filepath.Join(root, "state"), LogPath: filepath.Join(root, "harvester-sim.log"), done: make(chan struct{})}
	s.Kubeconfig = filepath.Join(s.Dir, "kubeconfig")
	logFile, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, append([]string{"--state-dir", s.Dir}, startArgs(ctx, opts.Args)...)...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start harvester-sim: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// startArgs are args with --start-timeout set to what is left of ctx's
// deadline, unless args set it or ctx has none.
func startArgs(ctx context.Context, args []string) []string {
	deadline, ok := ctx.Deadline()
	if !ok || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(strings.TrimLeft(a, "-"), "start-timeout") }) {
		return args
	}
	left := max(time.Until(deadline).Truncate(time.Second), time.Second)
	return append(slices.Clone(args), "--start-timeout="+left.String())
}

func (s *Sim) waitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(s.Dir, "ready")); err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("harvester-sim exited before ready (%w):\n%s", s.waitErr, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("harvester-sim not ready: %w:\n%s", ctx.Err(), s.logTail())
		case <-tick.C:
		}
	}
}

func (s *Sim) logTail() string { return s.LogTail(30) }

// LogTail is the last n lines of the simulator's log.
func (s *Sim) LogTail(n int) string {
	return strings.Join(last(s.logLines(), n), "\n")
}

// Warnings is the last n warnings and errors of the simulator's log: a
// container that exited and how long the kubelet's back-off holds it, a
// heartbeat that failed. A failed package prints them beside the log's
// tail, which a busy test fills with routine lines.
func (s *Sim) Warnings(n int) string {
	var warnings []string
	for _, line := range s.logLines() {
		if strings.Contains(line, " level=WARN ") || strings.Contains(line, " level=ERROR ") {
			warnings = append(warnings, line)
		}
	}
	return strings.Join(last(warnings, n), "\n")
}

func (s *Sim) logLines() []string {
	data, _ := os.ReadFile(s.LogPath)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// last is the last n of lines.
func last(lines []string, n int) []string {
	return lines[max(0, len(lines)-n):]
}

// RESTConfig is the admin's client configuration.
func (s *Sim) RESTConfig() (*rest.Config, error) {
	return kubeapi.ConfigFromFile(s.Kubeconfig, "harvester-machine-e2e")
}

// Stop ends the simulator and everything it started, and removes its
// files; an attached one it leaves to its owner.
func (s *Sim) Stop() error {
	if s.Attached() {
		return nil
	}
	var err error
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
			err = errors.New("harvester-sim did not stop within 30s of SIGTERM")
		}
	}
	return errors.Join(err, os.RemoveAll(s.root))
}

// PID is the simulator process's id.
func (s *Sim) PID() int {
	if s.Attached() {
		return s.pid
	}
	return s.cmd.Process.Pid
}

// Fault runs `bin/harvester-sim fault ARGS...` against this simulator; it
// returns once the fault is in effect (sim/fault).
func (s *Sim) Fault(ctx context.Context, args ...string) error {
	bin, err := Bin("harvester-sim")
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, append([]string{"fault", "--state-dir", s.Dir}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("harvester-sim fault %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// APIServerAway makes kube-apiserver go away with `fault restart-apiserver`
// or `fault freeze-apiserver DURATION` (args) and returns once it is away: the
// old process gone (a restart; the new one starts serving some seconds
// later) or stopped (a freeze). The channel reports the fault command's end.
func (s *Sim) APIServerAway(ctx context.Context, args ...string) (<-chan error, error) {
	done := make(chan error, 1)
	if len(args) == 0 || args[0] != "restart-apiserver" {
		done <- s.Fault(ctx, args...) // a freeze returns once the process is stopped
		return done, nil
	}
	data, err := os.ReadFile(filepath.Join(s.Dir, "apiserver.pid"))
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("apiserver.pid: %w", err)
	}
	go func() { done <- s.Fault(ctx, args...) }()
	// A process has no watch: poll until the old kube-apiserver has exited.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for syscall.Kill(pid, 0) == nil {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kube-apiserver %d did not stop: %w", pid, ctx.Err())
		case <-tick.C:
		}
	}
	return done, nil
}
