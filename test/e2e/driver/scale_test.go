package driver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Concurrent machines per round and rounds of TestConcurrentMachines.
const (
	scaleMachines = 50
	scaleRounds   = 3
)

// TestConcurrentMachines creates scaleMachines machines at once through
// rancher-machine, checks that rancher-machine and the simulator agree on
// them, removes them all at once (one rm each, as Rancher's delete jobs
// do), and checks that no object, no machine and no driver process is
// left; scaleRounds times.
func TestConcurrentMachines(t *testing.T) {
	r := newRM(t, "e2e-scale")
	for round := range scaleRounds {
		start := time.Now()
		names := make([]string, scaleMachines)
		for i := range names {
			names[i] = fmt.Sprintf("e2e-scale-pool1-r%dm%02d", round, i)
		}
		parallel(t, names, func(name string) (string, error) { return r.create(name, imageAndNet...) })
		created := time.Since(start)
		if got := strings.Fields(r.stdout("ls", "-q", "--filter", "state=Running")); !sameSet(got, names) {
			t.Fatalf("round %d: rancher-machine lists %d running machines, want the %d created: %v", round, len(got), len(names), got)
		}
		if got := simVMs(t, r.cluster); !sameSet(got, names) {
			t.Fatalf("round %d: the simulator has VMs %v, want %v", round, got, names)
		}
		parallel(t, names, func(name string) (string, error) { return r.run("rm", "-y", "--update-config", name) })
		if ls := r.stdout("ls", "-q"); ls != "" {
			t.Errorf("round %d: rancher-machine still lists %q", round, ls)
		}
		if vms := simVMs(t, r.cluster); len(vms) != 0 {
			t.Errorf("round %d: VMs left: %v", round, vms)
		}
		r.assertNothingLeft()
		if pids := driverProcessesAfter(t, 30*time.Second); len(pids) != 0 {
			t.Errorf("round %d: driver processes left: %v", round, pids)
		}
		t.Logf("round %d: %d machines created in %s, removed in %s", round, scaleMachines, created.Round(time.Second), (time.Since(start) - created).Round(time.Second))
	}
}

// parallel runs fn for every name at once and fails the test with every
// failure.
func parallel(t *testing.T, names []string, fn func(name string) (string, error)) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	outs := make([]string, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = fn(name)
		}()
	}
	wg.Wait()
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

// driverProcessesAfter waits up to grace for this worktree's driver
// processes to end and returns those still running. A plugin whose
// rancher-machine ended without closing it exits after libmachine's 10 s
// heartbeat timeout; processes have no watch, so this polls.
func driverProcessesAfter(t *testing.T, grace time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(grace)
	for {
		pids := driverProcesses(t)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// driverProcesses lists the pids of processes running this worktree's
// bin/docker-machine-driver-harvester (other checkouts' are not counted).
func driverProcesses(t *testing.T) []string {
	t.Helper()
	want := filepath.Join(binDir, "docker-machine-driver-harvester")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == want {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
