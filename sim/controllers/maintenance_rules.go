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

// What evicting a VMI's launcher pod does (KubeVirt v1.7's pod eviction
// admission for virt-launcher pods).
type eviction int

const (
	evictMigrate  eviction = iota // refused with 429; the VMI is marked for evacuation and migrates
	evictShutdown                 // allowed: the pod goes, the guest is shut down
	evictRefused                  // refused; nothing moves it (the drain waits)
)

// evictionStrategy is the VMI's strategy, else the cluster's: Harvester
// configures KubeVirt with LiveMigrate.
func evictionStrategy(vmi *kubevirtv1.VirtualMachineInstance) kubevirtv1.EvictionStrategy {
	if vmi.Spec.EvictionStrategy != nil {
		return *vmi.Spec.EvictionStrategy
	}
	return kubevirtv1.EvictionStrategyLiveMigrate
}

// isLiveMigratable is the VMI's LiveMigratable condition being True.
func isLiveMigratable(vmi *kubevirtv1.VirtualMachineInstance) (bool, string) {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable {
			return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
		}
	}
	return false, "no LiveMigratable condition"
}

// evictionOf is KubeVirt's rule for evicting the VMI's launcher pod:
// LiveMigrate migrates when migratable and is refused otherwise;
// LiveMigrateIfPossible migrates when migratable and lets the pod go
// otherwise; None lets it go; External is refused (another controller's
// job). It also says why.
func evictionOf(vmi *kubevirtv1.VirtualMachineInstance) (eviction, string) {
	s := evictionStrategy(vmi)
	ok, why := isLiveMigratable(vmi)
	switch s {
	case kubevirtv1.EvictionStrategyNone:
		return evictShutdown, "eviction strategy None"
	case kubevirtv1.EvictionStrategyLiveMigrate:
		if ok {
			return evictMigrate, "eviction strategy LiveMigrate"
		}
		return evictRefused, "eviction strategy LiveMigrate but not live-migratable (" + why + ")"
	case kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
		if ok {
			return evictMigrate, "eviction strategy LiveMigrateIfPossible"
		}
		return evictShutdown, "eviction strategy LiveMigrateIfPossible, not live-migratable (" + why + ")"
	case kubevirtv1.EvictionStrategyExternal:
		return evictRefused, "eviction strategy External: left to another controller"
	}
	return evictRefused, fmt.Sprintf("unknown eviction strategy %q", s)
}

// evacuatedByTaint: on a host tainted kubevirt.io/drain KubeVirt's
// evacuation controller migrates the VMIs whose strategy migrates on
// eviction (LiveMigrate, or LiveMigrateIfPossible when migratable).
func evacuatedByTaint(vmi *kubevirtv1.VirtualMachineInstance) bool {
	s := evictionStrategy(vmi)
	ok, _ := isLiveMigratable(vmi)
	return s == kubevirtv1.EvictionStrategyLiveMigrate || (s == kubevirtv1.EvictionStrategyLiveMigrateIfPossible && ok)
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
