package controllers

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Keys of Harvester's non-migratable VM map (pkg/util/constants.go).
const (
	keyMaintainModeStrategy = "MaintainModeStrategy"
)

// Harvester's drainhelper.DrainPossible errors.
var (
	errDrainNotPossible       = errors.New("draining of this node is not possible")
	errSingleControlPlaneNode = fmt.Errorf("%w: single controlplane cluster, cannot place controlplane in maintenance mode", errDrainNotPossible)
	errHAControlPlaneNode     = fmt.Errorf("%w: another controlplane is already in maintenance mode, cannot place current node in maintenance mode", errDrainNotPossible)
)

// drainPossible is Harvester's drainhelper.DrainPossible: a host that is
// not a control-plane or etcd node may always be drained; a control-plane
// node only when there are exactly three such nodes and none of them
// carries the maintain-status annotation.
func drainPossible(node *corev1.Node, nodes []corev1.Node) error {
	_, cp := node.Labels[hv.LabelRoleControlPlane]
	_, etcd := node.Labels[hv.LabelRoleEtcd]
	if !cp && !etcd {
		return nil
	}
	members := map[string]corev1.Node{}
	for _, n := range nodes {
		_, c := n.Labels[hv.LabelRoleControlPlane]
		_, e := n.Labels[hv.LabelRoleEtcd]
		if c || e {
			members[n.Name] = n
		}
	}
	if len(members) == 1 {
		return errSingleControlPlaneNode
	}
	available := 0
	for _, n := range members {
		if _, ok := n.Annotations[hv.AnnMaintainStatus]; !ok {
			available++
		}
	}
	if available != 3 {
		return errHAControlPlaneNode
	}
	return nil
}

// nonMigratableVMs is Harvester's FindNonMigratableVMS without Longhorn's
// last-healthy-replica check (hv.NonMigratable): names (namespace/name,
// sorted) by key.
func nonMigratableVMs(vmis []*kubevirtv1.VirtualMachineInstance, source string, nodes []corev1.Node) (map[string][]string, error) {
	return hv.NonMigratable(vmis, source, nodes)
}

// maintenanceRefusal is the error Harvester's nodedrain controller gives
// when it refuses maintenance mode without force (reasons sorted; Harvester
// iterates its map in random order).
func maintenanceRefusal(nonMigratable map[string][]string) string {
	keys := make([]string, 0, len(nonMigratable))
	for k := range nonMigratable {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	reasons := make([]string, 0, len(keys))
	for _, k := range keys {
		reasons = append(reasons, fmt.Sprintf("%s cannot be migrated due to %s", strings.Join(nonMigratable[k], ","), k))
	}
	return fmt.Sprintf("enabling maintenance mode is impossible. Non-migratable VMs found: %s. Use 'force drain' to perform a collective shutdown",
		strings.Join(reasons, "; "))
}

// uniqueVMs is Harvester's getUniqueVMSfromConditionMap: every name once, sorted.
func uniqueVMs(m map[string][]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hasDrainTaint: the host carries kubevirt.io/drain (NoSchedule).
func hasDrainTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == hv.TaintKubeVirtDrain && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
