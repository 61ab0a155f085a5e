// Package guest tests the rest of the story end to end against
// bin/harvester-sim --guest-clusters: machines created through the real
// rancher-machine and driver join a guest cluster, their K3s manifests land
// in it, and the cloud provider's load balancers get addresses from the
// simulated Harvester's IP pools.
package guest

import (
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/sim/tunables"
	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var env struct {
	sim  *simtest.Sim
	kube kubernetes.Interface
	dyn  dynamic.Interface
	virt kubevirt.Interface
}

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{
		Bins:     []string{"rancher-machine", "docker-machine-driver-harvester", "harvester-bootstrap", "kube-vip"},
		SimArgs:  []string{"--guest-clusters"},
		Tunables: map[string]string{tunables.ScheduleDelay: "100ms", tunables.BootDelay: "100ms", tunables.IPDelay: "100ms"},
		Ready: func(e *harness.Env) error {
			env.sim, env.kube, env.dyn, env.virt = e.Sim, e.Kube, e.Dyn, e.Virt
			return nil
		},
	})
}
