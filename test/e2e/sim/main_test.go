// Package sim_test checks the simulated Harvester end to end: its real
// control plane, fixtures, faults and process handling.
package sim_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	simulator *simtest.Sim
	kube      kubernetes.Interface
	dyn       dynamic.Interface
	virt      kubevirt.Interface
)

func TestMain(m *testing.M) {
	// Guest clusters: TestFaultHostDown watches a guest node follow its
	// host's failure.
	harness.Main(m, harness.Options{SimArgs: []string{"--guest-clusters"}, Ready: func(env *harness.Env) error {
		simulator, kube, dyn, virt = env.Sim, env.Kube, env.Dyn, env.Virt
		return nil
	}})
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
