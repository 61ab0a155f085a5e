// Package simctl tests the simulated KubeVirt and Harvester controllers end
// to end against the real kube-apiserver of bin/harvester-sim.
package simctl

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
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "simctl e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := simtest.Start(ctx, simtest.Options{Args: []string{
		"--schedule-delay=" + scheduleDelay.String(), "--boot-delay=" + bootDelay.String(), "--ip-delay=" + ipDelay.String(),
	}})
	if err != nil {
		return 1, err
	}
	defer func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop simulator:", err)
		}
	}()
	cfg, err := s.RESTConfig()
	if err != nil {
		return 1, err
	}
	env.sim = s
	if env.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return 1, err
	}
	if env.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return 1, err
	}
	code := m.Run()
	if code != 0 {
		if data, err := os.ReadFile(s.LogPath); err == nil {
			fmt.Fprintf(os.Stderr, "--- harvester-sim log ---\n%s\n", tail(string(data), 60))
		}
	}
	return code, nil
}

func tail(s string, lines int) string {
	n := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			n++
			if n > lines {
				return s[i+1:]
			}
		}
	}
	return s
}
