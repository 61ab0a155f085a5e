// Package simctl tests the simulated KubeVirt and Harvester controllers end
// to end against the real kube-apiserver of bin/harvester-sim.
package simctl

import (
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/sim/tunables"
	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// Delays the simulator runs with; tests derive bounded waits from them.
const (
	scheduleDelay = 200 * time.Millisecond
	bootDelay     = 200 * time.Millisecond
	ipDelay       = 300 * time.Millisecond
	waitTimeout   = 60 * time.Second
)

// env is the simulator shared by the package's tests.
var env struct {
	sim  *simtest.Sim
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{
		Tunables: map[string]string{tunables.ScheduleDelay: scheduleDelay.String(), tunables.BootDelay: bootDelay.String(), tunables.IPDelay: ipDelay.String()},
		Ready: func(e *harness.Env) error {
			env.sim, env.kube, env.dyn = e.Sim, e.Kube, e.Dyn
			return nil
		},
	})
}
