package harvester

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KeyNodeSchedulingRequirementsNotMet is the key of Harvester's
// non-migratable VM map for VMs no other host can take
// (pkg/util/constants.go).
const KeyNodeSchedulingRequirementsNotMet = "NodeSchedulingRequirementsNotMet"

// HostReady is Harvester v1.8's isNodeReady (nodedrain controller): the
// host is schedulable and Ready True.
func HostReady(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// requiredNodeSelector is the VMI's required node affinity, or nil.
func requiredNodeSelector(vmi *kubevirtv1.VirtualMachineInstance) (*nodeaffinity.NodeSelector, error) {
	a := vmi.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, nil
	}
	sel, err := nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return nil, fmt.Errorf("VMI %s/%s: required node affinity: %w", vmi.Namespace, vmi.Name, err)
	}
	return sel, nil
}

// NonMigratableKeys are the keys of Harvester v1.8's FindNonMigratableVMS
// (nodedrain controller; Longhorn's last-healthy-replica key not judged)
// a VMI on host source falls under, which make Harvester refuse
// maintenance mode without force: the reason of its LiveMigratable False
// condition, and KeyNodeSchedulingRequirementsNotMet when no other host
// that is HostReady (and not skipped: hosts drained together) matches its
// required node affinity and then its nodeSelector. A node affinity that
// does not parse is an error, as Harvester's check fails on it.
func NonMigratableKeys(vmi *kubevirtv1.VirtualMachineInstance, source string, nodes []corev1.Node, skip func(host string) bool) ([]string, error) {
	var keys []string
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionFalse {
			keys = append(keys, c.Reason)
		}
	}
	sel, err := requiredNodeSelector(vmi)
	if err != nil {
		return keys, err
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Name == source || (skip != nil && skip(n.Name)) || !HostReady(n) || (sel != nil && !sel.Match(n)) {
			continue
		}
		if len(vmi.Spec.NodeSelector) == 0 || labels.SelectorFromSet(vmi.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
			return keys, nil
		}
	}
	return append(keys, KeyNodeSchedulingRequirementsNotMet), nil
}

// Why Harvester's upgrade stops a VM before draining its host.
const (
	UpgradeStopOnlyHost     = "the only host: every VM is stopped"
	UpgradeStopNodeSelector = "it has a nodeSelector"
	UpgradeStopHostDevices  = "it has host devices"
	UpgradeStopNodeAffinity = "no other schedulable host matches its required node affinity"
)

// UpgradeStopReason is Harvester v1.8's GetAllNonLiveMigratableVMINames
// (pkg/util/virtualmachineinstance) for one VMI on host current: what the
// upgrade's pre-drain (upgrade_node.sh: upgrade-helper
// vm-live-migrate-detector --shutdown) stops before it taints the host.
// Witness hosts do not count; with one host left every VMI; else a VMI
// with a nodeSelector, with host devices (GPUs are not looked at), or
// whose required node affinity no other schedulable host matches. "" when
// it is not stopped. A node affinity term that does not parse is an error
// (the helper, and so the pre-drain, fails) when, on some other
// schedulable host, no term that parses matches.
func UpgradeStopReason(vmi *kubevirtv1.VirtualMachineInstance, current string, nodes []corev1.Node) (string, error) {
	var hosts []*corev1.Node
	for i := range nodes {
		if _, witness := nodes[i].Labels[LabelWitnessHost]; !witness {
			hosts = append(hosts, &nodes[i])
		}
	}
	switch {
	case len(hosts) == 1:
		return UpgradeStopOnlyHost, nil
	case vmi.Spec.NodeSelector != nil:
		return UpgradeStopNodeSelector, nil
	case vmi.Spec.Domain.Devices.HostDevices != nil:
		return UpgradeStopHostDevices, nil
	}
	var terms *corev1.NodeSelector
	if a := vmi.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	migratable := false
	for _, n := range hosts {
		if n.Name == current || n.Spec.Unschedulable {
			continue
		}
		// migratableByNodeAffinity: MatchNodeSelectorTerms, whose terms
		// that do not parse are an error only when no other term matches.
		ok := terms == nil
		if !ok {
			var err error
			if ok, err = schedulingcorev1.MatchNodeSelectorTerms(n, terms); err != nil {
				return "", err
			}
		}
		migratable = migratable || ok
	}
	if migratable {
		return "", nil
	}
	return UpgradeStopNodeAffinity, nil
}
