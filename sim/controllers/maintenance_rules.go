package controllers

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
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
	_, cp := node.Labels[harvester.LabelRoleControlPlane]
	_, etcd := node.Labels[harvester.LabelRoleEtcd]
	if !cp && !etcd {
		return nil
	}
	members := map[string]corev1.Node{}
	for _, n := range nodes {
		_, c := n.Labels[harvester.LabelRoleControlPlane]
		_, e := n.Labels[harvester.LabelRoleEtcd]
		if c || e {
			members[n.Name] = n
		}
	}
	if len(members) == 1 {
		return errSingleControlPlaneNode
	}
	available := 0
	for _, n := range members {
		if _, ok := n.Annotations[harvester.AnnMaintainStatus]; !ok {
			available++
		}
	}
	if available != 3 {
		return errHAControlPlaneNode
	}
	return nil
}

// nonMigratableVMs is Harvester's FindNonMigratableVMS without Longhorn's
// last-healthy-replica check (harvester.NonMigratableKeys per VMI): names
// (namespace/name, sorted) by key.
func nonMigratableVMs(vmis []*kubevirtv1.VirtualMachineInstance, source string, nodes []corev1.Node) (map[string][]string, error) {
	out := map[string][]string{}
	for _, vmi := range vmis {
		keys, err := harvester.NonMigratableKeys(vmi, source, nodes, nil)
		if err != nil {
			return nil, fmt.Errorf("error while checking vmi scheduling requirements: %w", err)
		}
		for _, k := range keys {
			out[k] = append(out[k], vmi.Namespace+"/"+vmi.Name)
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out, nil
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

// evictionOf is KubeVirt's rule for evicting the VMI's launcher pod
// (harvester.EvictionOf, the strategy resolved as Harvester configures
// KubeVirt), and why.
func evictionOf(vmi *kubevirtv1.VirtualMachineInstance) (harvester.Eviction, string) {
	s, _ := harvester.EvictionStrategy(vmi, nil, nil)
	ok, why := isLiveMigratable(vmi)
	ev := harvester.EvictionOf(s, ok)
	switch s {
	case kubevirtv1.EvictionStrategyExternal:
		return ev, "eviction strategy External: left to another controller"
	case kubevirtv1.EvictionStrategyNone:
		return ev, "eviction strategy None"
	case kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
		switch {
		case ok:
			return ev, "eviction strategy " + string(s)
		case s == kubevirtv1.EvictionStrategyLiveMigrate:
			return ev, "eviction strategy LiveMigrate but not live-migratable (" + why + ")"
		}
		return ev, "eviction strategy LiveMigrateIfPossible, not live-migratable (" + why + ")"
	}
	return ev, fmt.Sprintf("unknown eviction strategy %q: not acted on, the pod goes", s)
}

// isLiveMigratable is the VMI's LiveMigratable condition being True, and
// its reason and message.
func isLiveMigratable(vmi *kubevirtv1.VirtualMachineInstance) (bool, string) {
	st, reason, msg := harvester.LiveMigratable(vmi)
	if st == corev1.ConditionUnknown && reason == "" {
		return false, "no LiveMigratable condition"
	}
	return st == corev1.ConditionTrue, reason + ": " + msg
}

// hasDrainTaint: the host carries kubevirt.io/drain (NoSchedule).
func hasDrainTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == harvester.TaintKubeVirtDrain && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
