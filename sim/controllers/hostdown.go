package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// A host that is down (`harvester-sim fault host-down`): its kubelet and
// virt-handler are gone with it, so nothing on the host reports any more.
// Its guests stop answering; their VMIs keep the status last reported.

// hostIsDown reports whether host node is down.
func (s *sim) hostIsDown(node string) bool {
	return node != "" && s.faults().MatchName(fault.HostDown, node) != ""
}

// onDownHost reports whether the VMI runs on a host that is down.
func (s *sim) onDownHost(u *unstructured.Unstructured) bool {
	node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
	return s.hostIsDown(node)
}

// vmiOnDownHost is a VMI on a down host: its guest is off the network and
// virt-handler does nothing more for it.
func (s *sim) vmiOnDownHost(_ context.Context, key string, _ *unstructured.Unstructured) (time.Duration, error) {
	s.guestOffNetwork(key)
	return 0, nil
}
