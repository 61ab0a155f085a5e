// Stand-in for the kubelet, Kubernetes v1.34.4: a host that is down: no
// kubelet, no virt-handler. It follows
// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/kubelet.go.

package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// A host that is down (`harvester-sim fault host-down`): its kubelet and
// virt-handler are gone with it. The kubelet renews no Lease, posts no
// status and confirms no pod deletion (heartbeat.go, kubelet.go); its
// virt-handler beats no more and reports nothing (handler.go); the guests
// stop answering and their VMIs keep the status last reported. KubeVirt's
// virt-controller, which runs elsewhere, decides what becomes of them.

// syncHostFaults takes down the hosts the fault ConfigMap lists as down
// and brings up the others.
func (s *sim) syncHostFaults() {
	nodes, _ := s.nodes.List(labels.Everything())
	f := s.faults()
	for _, n := range nodes {
		down := f.MatchName(fault.HostDown, n.Name) != ""
		if s.hosts.Host(n.Name).setDown(down, time.Now()) {
			s.log.Info("fault host-down", "node", n.Name, "down", down)
			s.hosts.wakeUp()
		}
	}
	s.enqueueNamespace(s.vmiQ, "", s.vmiKeys)
	s.enqueueNamespace(s.podQ, "", s.podKeys)
}

func (s *sim) podKeys(ns string) []string {
	return objectKeys(s.kubeInformers.Core().V1().Pods().Lister().Pods(ns).List(labels.Everything()))
}
