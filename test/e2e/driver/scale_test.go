package driver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// soakEnv selects the soak's size: unset, the short soak `make test` runs
// (10 machines, two rounds); "long", the one `make soak` runs (50 machines,
// three rounds, as a Rancher pool scaled at once).
const soakEnv = "HARVESTER_E2E_SOAK"

// soakSize is the soak's machines per round and rounds.
type soakSize struct{ machines, rounds int }

// longSoak is the size `make soak` runs.
var longSoak = soakSize{machines: 50, rounds: 3}

// soakSizeFromEnv reads soakEnv; any other value fails the test.
func soakSizeFromEnv(t *testing.T) soakSize {
	t.Helper()
	switch v := os.Getenv(soakEnv); v {
	case "":
		return soakSize{machines: 10, rounds: 2}
	case "long":
		return longSoak
	default:
		t.Fatalf("%s=%q: want empty (the short soak: 10 machines, 2 rounds) or \"long\" (50 machines, 3 rounds)", soakEnv, v)
		return soakSize{}
	}
}

// TestConcurrentMachines is the soak: size.machines machines created at
// once through rancher-machine, checked, removed at once (one rm each, as
// Rancher's delete jobs do), and nothing left; size.rounds times.
// TestUnderCPUHog runs it again with every core busy.
func TestConcurrentMachines(t *testing.T) {
	t.Parallel()
	soak(t, "e2e-scale")
}

// soak runs the rounds. Its only deadline moves with progress (a command
// ending, a VM or VMI of the pool changing): a round fails when nothing
// progressed for a window derived from one machine's create and rm
// measured first, on this machine under its current load.
func soak(t *testing.T, cluster string) {
	size := soakSizeFromEnv(t)
	r := newRM(t, cluster)
	window := calibrate(t, r, size.machines)
	for round := range size.rounds {
		soakRound(t, r, round, size.machines, window)
	}
}

// calibrate creates and removes one machine and derives the soak's stall
// window: the time the round's work would take done one machine after
// another on the machine's cores, twice, and at least a minute.
func calibrate(t *testing.T, r *rm, machines int) time.Duration {
	t.Helper()
	name := r.cluster + "-pool1-calib"
	start := time.Now()
	r.mustCreate(name, imageAndNet...)
	created := time.Since(start)
	r.mustRun("rm", "-y", "--update-config", name)
	one := time.Since(start)
	window := max(time.Minute, 2*one*time.Duration(machines)/time.Duration(runtime.NumCPU()))
	t.Logf("one machine: create %s, create+rm %s on %d CPUs: a round fails after %s without progress",
		created.Round(time.Millisecond), one.Round(time.Millisecond), runtime.NumCPU(), window.Round(time.Second))
	return window
}

func soakRound(t *testing.T, r *rm, round, machines int, window time.Duration) {
	t.Helper()
	p, ctx := simtest.NewProgress(context.Background(), window)
	defer p.Stop()
	go watchPool(ctx, p, r.cluster)
	start := time.Now()
	names := make([]string, machines)
	for i := range names {
		names[i] = fmt.Sprintf("%s-pool1-r%dm%02d", r.cluster, round, i)
	}
	// The driver's own wait for each VM gets the same window.
	wait := fmt.Sprintf("--harvester-wait-timeout=%d", int(window.Seconds()))
	parallelProgress(t, ctx, p, names, func(name string) (string, error) {
		return r.runCtx(ctx, nil, r.createArgs(name, append(imageAndNet, wait)...)...)
	})
	created := time.Since(start)
	if got := strings.Fields(r.stdout("ls", "-q", "--filter", "state=Running")); !sameSet(got, names) {
		t.Fatalf("round %d: rancher-machine lists %d running machines, want the %d created: %v", round, len(got), len(names), got)
	}
	if got := simVMs(t, r.cluster); !sameSet(got, names) {
		t.Fatalf("round %d: the simulator has VMs %v, want %v", round, got, names)
	}
	parallelProgress(t, ctx, p, names, func(name string) (string, error) {
		return r.runCtx(ctx, nil, "rm", "-y", "--update-config", name)
	})
	if ls := r.stdout("ls", "-q"); ls != "" {
		t.Errorf("round %d: rancher-machine still lists %q", round, ls)
	}
	if vms := simVMs(t, r.cluster); len(vms) != 0 {
		t.Errorf("round %d: VMs left: %v", round, vms)
	}
	r.assertNothingLeft()
	simtest.NoPluginLeft(t, r.store)
	t.Logf("round %d: %d machines created in %s, removed in %s", round, machines, created.Round(time.Second), (time.Since(start) - created).Round(time.Second))
}

// watchPool reports every change of the pool's VMs and VMIs as progress
// until ctx ends.
func watchPool(ctx context.Context, p *simtest.Progress, cluster string) {
	opts := metav1.ListOptions{LabelSelector: labelCluster + "=" + cluster}
	watches := []func() (watch.Interface, error){
		func() (watch.Interface, error) { return virt.KubevirtV1().VirtualMachines(namespace).Watch(ctx, opts) },
		func() (watch.Interface, error) {
			return virt.KubevirtV1().VirtualMachineInstances(namespace).Watch(ctx, opts)
		},
	}
	for _, start := range watches {
		go func() {
			for ctx.Err() == nil {
				w, err := start()
				if err != nil {
					p.Step("watch error: " + err.Error())
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
					continue
				}
				for ev := range w.ResultChan() {
					if m, ok := ev.Object.(metav1.Object); ok {
						p.Step(fmt.Sprintf("%s %T %s", ev.Type, ev.Object, m.GetName()))
					}
				}
				w.Stop()
			}
		}()
	}
}

// parallel runs fn for every name at once and fails the test with every
// failure.
func parallel(t *testing.T, names []string, fn func(name string) (string, error)) {
	t.Helper()
	parallelProgress(t, context.Background(), nil, names, fn)
}

// parallelProgress is parallel with each end counting as progress (p may
// be nil), failing the test also when ctx ended with a stall.
func parallelProgress(t *testing.T, ctx context.Context, p *simtest.Progress, names []string, fn func(name string) (string, error)) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	outs := make([]string, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = fn(name)
			if p != nil {
				p.Step(name + " done")
			}
		}()
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		t.Errorf("stalled: %v", cause)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v\n%s", names[i], err, outs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

func simVMs(t *testing.T, cluster string) []string {
	t.Helper()
	list, err := virt.KubevirtV1().VirtualMachines(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labelCluster + "=" + cluster})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, vm := range list.Items {
		out = append(out, vm.Name)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
