package sim_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// TestTuneNodeGrace: `harvester-sim tune` changes the grace period while
// the simulator runs: the real kube-controller-manager, a child of the
// simulator, runs again with the new --node-monitor-grace-period (and the
// node monitor period kube-controller-manager's default 5 s, or an eighth
// of a shorter grace), and `NAME=` gives it its start value back. Bad input
// is refused before anything changes, naming each problem.
func TestTuneNodeGrace(t *testing.T) {
	out, err := simCLI(t, "tune", "--state-dir", simulator.Dir, "node-monitor-grace-period=2s", "grace=8s", "boot-delay")
	for _, want := range []string{
		`node-monitor-grace-period="2s": 2s is too short: use 4s or more`,
		`"grace" is no tunable: use one of node-monitor-grace-period, migration-duration, schedule-delay, boot-delay, ip-delay`,
		`"boot-delay" is not NAME=DURATION`,
	} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("tune with bad input: %v, output lacks %q:\n%s", err, want, out)
		}
	}
	checkKCMArgs(t, "--node-monitor-grace-period=50s", "--node-monitor-period=5s")

	if out, err := simCLI(t, "tune", "--state-dir", simulator.Dir, "node-monitor-grace-period=16s"); err != nil {
		t.Fatalf("tune: %v\n%s", err, out)
	}
	checkKCMArgs(t, "--node-monitor-grace-period=16s", "--node-monitor-period=2s")
	if out, err := simCLI(t, "tune", "--state-dir", simulator.Dir, "node-monitor-grace-period="); err != nil {
		t.Fatalf("tune back: %v\n%s", err, out)
	}
	checkKCMArgs(t, "--node-monitor-grace-period=50s", "--node-monitor-period=5s")
}

// checkKCMArgs fails t unless the simulator's one kube-controller-manager
// runs with every flag of want.
func checkKCMArgs(t *testing.T, want ...string) {
	t.Helper()
	bin, err := simtest.Bin("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	pid := childRunning(t, simulator.PID(), bin)
	if pid == 0 {
		t.Fatalf("no child of the simulator runs %s", bin)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("kube-controller-manager (pid %d) runs without %s: %q", pid, w, args)
		}
	}
}
