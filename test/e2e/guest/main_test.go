// Package guest tests the rest of the story end to end against
// bin/harvester-sim --guest-clusters: machines created through the real
// rancher-machine and driver join a guest cluster, their K3s manifests land
// in it, and the cloud provider's load balancers get addresses from the
// simulated Harvester's IP pools.
package guest

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

var env struct {
	sim  *simtest.Sim
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "guest e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	for _, name := range []string{"rancher-machine", "docker-machine-driver-harvester", "harvester-bootstrap"} {
		if _, err := simtest.Bin(name); err != nil {
			return 1, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := simtest.Start(ctx, simtest.Options{Args: []string{
		"--guest-clusters", "--schedule-delay=100ms", "--boot-delay=100ms", "--ip-delay=100ms",
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
			fmt.Fprintf(os.Stderr, "--- harvester-sim log ---\n%s\n", data)
		}
	}
	return code, nil
}
