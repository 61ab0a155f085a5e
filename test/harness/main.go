package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// Options describe what a test package needs.
type Options struct {
	Bins    []string // programs in bin/ the tests run besides harvester-sim and its tools
	SimArgs []string // extra harvester-sim flags (--guest-clusters)
	// Tunables are the package's timings (sim/tunables names, e.g.
	// "boot-delay": "100ms"): start flags of a simulator it starts, tuned
	// for its tests on one it attaches to and given back after.
	Tunables map[string]string
	// Ready runs once the simulator is ready, before the tests: the
	// package takes what it shares from env.
	Ready func(env *Env) error
	// Teardown runs after the tests, before the checks: it removes what
	// the package's tests share (made once for all of them).
	Teardown func(ctx context.Context, env *Env) error
	// Checks run after the tests (and whenever a test calls Env.Verify):
	// conditions every test of the package must leave true.
	Checks []Check
}

// Check is a condition verified after the tests.
type Check struct {
	Name string
	Run  func(ctx context.Context, env *Env) error
}

// Env is what the harness gives a test package: the simulator, admin
// clients, and whether guests can be reached.
type Env struct {
	Isolation
	Sim    *simtest.Sim
	Config *rest.Config // admin
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
	Virt   kubevirt.Interface
	checks []Check
}

// current is the package's Env while its tests run.
var current *Env

// Current is the Env of the running test package (nil before Main set it up).
func Current() *Env { return current }

// Main is a test package's TestMain: it enters the private network
// namespace (re-executing the test binary), checks the binaries, starts
// the simulator with its guest network, runs the tests and the checks,
// stops the simulator and exits.
func Main(m *testing.M, opts Options) {
	iso := Enter()
	code, err := run(m, opts, iso)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.Exit(code)
}

// packageSimStart bounds the start of a package's simulator.
const packageSimStart = 6 * time.Minute

func run(m *testing.M, opts Options, iso Isolation) (int, error) {
	if err := simtest.MarkRun(); err != nil {
		return 1, err
	}
	for _, name := range opts.Bins {
		if _, err := simtest.Bin(name); err != nil {
			return 1, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), packageSimStart+time.Minute)
	defer cancel()
	s, err := simulatorFor(ctx, opts, iso)
	if err != nil {
		return 1, err
	}
	defer func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the simulated Harvester:", err)
		}
	}()
	env, err := newEnv(s, iso, opts.Checks)
	if err != nil {
		return 1, err
	}
	if opts.Ready != nil {
		if err := opts.Ready(env); err != nil {
			return 1, err
		}
	}
	var before state
	if s.Attached() {
		if before, err = snapshot(ctx, env); err != nil {
			return 1, err
		}
		if err := tune(ctx, env, opts.Tunables); err != nil {
			return 1, err
		}
	}
	current = env
	code := m.Run()
	if err := teardown(env, opts.Teardown); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: after the tests:", err)
		code = 1
	}
	if err := env.runChecks(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: after the tests:", err)
		code = 1
	}
	if s.Attached() {
		if err := leftBehind(env, before, opts.Tunables); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: the package did not leave the shared simulator as it found it:", err)
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- harvester-sim warnings and errors (last 40) ---\n%s\n", s.Warnings(40))
		fmt.Fprintf(os.Stderr, "--- harvester-sim log (last 60 lines) ---\n%s\n", s.LogTail(60))
	}
	return code, nil
}

// teardown runs fn, if any, within a few minutes.
func teardown(env *Env, fn func(context.Context, *Env) error) error {
	if fn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := fn(ctx, env); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return nil
}

// simulatorFor is the simulator the package runs on: the one named in
// simtest.AttachEnv (the chain runner's, shared one package at a time),
// else one of its own, started with the package's flags and tunables.
// make test starts several packages' simulators at once on two cores,
// while go test still compiles, so a start gets packageSimStart.
func simulatorFor(ctx context.Context, opts Options, iso Isolation) (*simtest.Sim, error) {
	if root := os.Getenv(simtest.AttachEnv); root != "" {
		return simtest.Attach(root)
	}
	args := append(append(iso.SimArgs(), "--start-timeout="+packageSimStart.String()), opts.SimArgs...)
	for name, value := range opts.Tunables {
		args = append(args, "--"+name+"="+value)
	}
	s, err := simtest.Start(ctx, simtest.Options{Args: args})
	if err != nil {
		return nil, fmt.Errorf("start the simulated Harvester: %w", err)
	}
	return s, nil
}

func newEnv(s *simtest.Sim, iso Isolation, checks []Check) (*Env, error) {
	cfg, err := s.RESTConfig()
	if err != nil {
		return nil, err
	}
	env := &Env{Isolation: iso, Sim: s, Config: cfg, checks: append([]Check{noPluginLeft}, checks...)}
	if env.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if env.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if env.Virt, err = kubevirt.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return env, nil
}

// noPluginLeft is every package's check: no driver plugin started by this
// package's rancher-machine commands is running once they have returned
// (other packages' plugins, at work while "go test ./..." runs them side
// by side, are theirs to check) (a plugin exits with the rancher-machine that started it; each
// test of test/e2e/driver and test/e2e/guest also checks its own with
// simtest.NoPluginLeft).
var noPluginLeft = Check{Name: "no driver plugin process left", Run: func(ctx context.Context, _ *Env) error {
	left, err := simtest.RunPluginsLeft(ctx)
	if err != nil || len(left) == 0 {
		return err
	}
	var pids []string
	for _, p := range left {
		pids = append(pids, p.String())
	}
	return fmt.Errorf("still running: %s", strings.Join(pids, "; "))
}}

// AddCheck registers another check (e.g. from a test helper's first use).
func (e *Env) AddCheck(c Check) { e.checks = append(e.checks, c) }

// Verify runs the checks now and fails t with each that does not hold;
// tests call it (e.g. in t.Cleanup) to check after themselves.
func (e *Env) Verify(t testing.TB) {
	t.Helper()
	if err := e.runChecks(); err != nil {
		t.Error(err)
	}
}

func (e *Env) runChecks() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, c := range e.checks {
		if err := c.Run(ctx, e); err != nil {
			errs = append(errs, fmt.Errorf("check %s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// NeedGuests skips t, saying why, unless guests can be reached: only in
// the private namespace do guest addresses exist and answer.
func NeedGuests(t testing.TB) {
	t.Helper()
	if current == nil || !current.Isolated {
		why := "the harness did not start"
		if current != nil {
			why = current.Why
		}
		msg := "reaches a guest, which only happens in the private network namespace: " + strings.TrimSpace(why)
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI runs as root, where the namespace must be available)")
		}
		t.Skip(msg)
	}
}
