// Package sim_test checks the simulated Harvester end to end: its real
// control plane, fixtures, faults and process handling.
package sim_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	simulator *simtest.Sim
	kube      kubernetes.Interface
	dyn       dynamic.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	simulator, err = simtest.Start(ctx, simtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start simulated Harvester:", err)
		return 1
	}
	defer func() {
		if err := simulator.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop simulated Harvester:", err)
		}
	}()
	cfg, err := simulator.RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kube = kubernetes.NewForConfigOrDie(cfg)
	dyn = dynamic.NewForConfigOrDie(cfg)
	return m.Run()
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
