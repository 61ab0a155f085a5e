// Package driver_test drives bin/docker-machine-driver-harvester through the
// real bin/rancher-machine against one simulated Harvester, the way Rancher
// runs it: credentials in the environment, --custom-install-script and
// --harvester-cluster-name.
package driver_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	sim        *simtest.Sim
	kube       kubernetes.Interface
	virt       kubevirt.Interface
	kubeconfig string // admin kubeconfig content
	binDir     string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	for _, name := range []string{"rancher-machine", "docker-machine-driver-harvester", "harvester-sim", "harvester-bootstrap"} {
		if _, err := simtest.Bin(name); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			return 1
		}
	}
	root, err := simtest.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	binDir = root + "/bin"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sim, err = simtest.Start(ctx, simtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: start simulator:", err)
		return 1
	}
	defer func() {
		if err := sim.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop simulator:", err)
		}
	}()
	cfg, err := sim.RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	if kube, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	if virt, err = kubevirt.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	b, err := os.ReadFile(sim.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	kubeconfig = string(b)
	return m.Run()
}
