package harvester

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Harvester v1.8's refusals of maintenance mode for a control-plane host
// (pkg/util/drainhelper/helper.go, the errors' text as Harvester words
// it): the node action enableMaintenanceMode (maintenancePossible,
// pkg/api/node/formatter.go) returns them, and the nodedrain controller
// checks again before it drains.
var (
	ErrDrainNotPossible       = errors.New("draining of this node is not possible")
	ErrSingleControlPlaneHost = fmt.Errorf("%w: single controlplane cluster, cannot place controlplane in maintenance mode", ErrDrainNotPossible)
	ErrHAControlPlaneHost     = fmt.Errorf("%w: another controlplane is already in maintenance mode, cannot place current node in maintenance mode", ErrDrainNotPossible)
)

// controlPlaneHostsHA is drainhelper's defaultHACPCount: the control-plane
// hosts that must all be out of maintenance for one of them to go in.
const controlPlaneHostsHA = 3

// DrainPossible is Harvester v1.8's drainhelper.DrainPossible for host
// among hosts (host among them), with inMaintenance saying which hosts
// carry the annotation harvesterhci.io/maintain-status (any value; nil:
// read the annotation). A host labelled neither
// node-role.kubernetes.io/control-plane nor node-role.kubernetes.io/etcd
// (the keys' presence counts, not their value) may always go in. Else its
// control-plane members are the hosts with either label (a witness host,
// etcd only, among them): when host is the only one, ErrSingleControlPlaneHost;
// when the members not in maintenance are not exactly three,
// ErrHAControlPlaneHost (so also with two, or four or more, members).
func DrainPossible(host *corev1.Node, hosts []corev1.Node, inMaintenance func(*corev1.Node) bool) error {
	if !controlPlaneMember(host) {
		return nil
	}
	if inMaintenance == nil {
		inMaintenance = func(n *corev1.Node) bool {
			_, ok := n.Annotations[AnnMaintainStatus]
			return ok
		}
	}
	members := map[string]bool{}
	for i := range hosts {
		if controlPlaneMember(&hosts[i]) {
			members[hosts[i].Name] = !inMaintenance(&hosts[i])
		}
	}
	if len(members) == 1 {
		return ErrSingleControlPlaneHost
	}
	available := 0
	for _, ok := range members {
		if ok {
			available++
		}
	}
	if available != controlPlaneHostsHA {
		return ErrHAControlPlaneHost
	}
	return nil
}

// controlPlaneMember: the host carries the control-plane or the etcd role
// label (drainhelper selects both with selection.Exists).
func controlPlaneMember(n *corev1.Node) bool {
	_, cp := n.Labels[LabelRoleControlPlane]
	_, etcd := n.Labels[LabelRoleEtcd]
	return cp || etcd
}
