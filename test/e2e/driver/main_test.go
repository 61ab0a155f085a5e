// Package driver_test drives bin/docker-machine-driver-harvester through the
// real bin/rancher-machine against one simulated Harvester, the way Rancher
// runs it: credentials in the environment, --custom-install-script and
// --harvester-cluster-name.
//
// A test that touches only objects of its own (machines, VMs, Secrets,
// namespaces, address ranges and fault patterns whose names no other test
// uses) calls t.Parallel() first. One that changes hosts or what other
// tests share stays sequential: simulator faults that hit every VM or the
// API server (reject-create, stuck-scheduling, restart/freeze), host
// maintenance, cordons and allocatable, ResourceQuotas, PriorityClasses
// and admission policies, the process environment (t.Setenv), timing that
// other tests' load upsets, and the guest grant of namespace default,
// which a revoke there deletes once no credential of the namespace is left
// (credentials.DropGrantIfUnused) while another test's credential may be
// on its way. go test runs the sequential tests first, one at a time, then
// the parallel ones together, at most -parallel at once (the Makefile's).
package driver_test

import (
	"os"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	sim        *simtest.Sim
	kube       kubernetes.Interface
	dynAdmin   dynamic.Interface
	virt       kubevirt.Interface
	kubeconfig string // admin kubeconfig content
	binDir     string
)

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{
		Bins: []string{"rancher-machine", "docker-machine-driver-harvester", "harvester-bootstrap"},
		// A live migration's transfer runs 4 s, not the simulator's 1 s:
		// TestMachineSurvivesMigration needs whole rancher-machine status
		// and ip calls inside a migration, and on a loaded 2-core machine
		// each takes over a second (none fell inside a 2.4 s migration).
		SimArgs: []string{"--migration-duration", "4s"},
		Ready: func(env *harness.Env) error {
			sim, kube, dynAdmin, virt = env.Sim, env.Kube, env.Dyn, env.Virt
			root, err := simtest.RepoRoot()
			if err != nil {
				return err
			}
			binDir = root + "/bin"
			b, err := os.ReadFile(sim.Kubeconfig)
			kubeconfig = string(b)
			return err
		},
	})
}
