package maintenance

import (
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// hostList is every host of the snapshot, by name.
func (w *world) hostList() []corev1.Node {
	out := make([]corev1.Node, 0, len(w.nodes))
	for _, name := range w.nodeNames() {
		out = append(out, *w.nodes[name])
	}
	return out
}

// maintenanceGate is why Harvester v1.8 refuses to put p's host into
// maintenance mode without force (nodedrain controller,
// FindNonMigratableVMS: harvester.NonMigratableKeys, the hosts drained
// together not counted as targets): the VMI's LiveMigratable condition is
// False, or no other Ready, schedulable host matches its required node
// affinity and nodeSelector (NodeSchedulingRequirementsNotMet); with force
// Harvester stops such VMs. "" when neither holds. (Its third reason, a
// Longhorn volume whose last healthy replica is on the host, is not
// judged.)
func (w *world) maintenanceGate(p *placed, unavailable map[string]bool) string {
	keys, err := harvester.NonMigratableKeys(p.vmi, p.node, w.hostList(), func(h string) bool { return unavailable[h] })
	if err != nil {
		return "Harvester's check fails on it: " + err.Error()
	}
	if len(keys) == 0 {
		return ""
	}
	if keys[0] == harvester.KeyNodeSchedulingRequirementsNotMet {
		return "no other Ready, schedulable host matches its node affinity and nodeSelector (" + keys[0] + ")"
	}
	return "LiveMigratable False (" + keys[0] + ")"
}

// upgradeStops is why Harvester v1.8's upgrade stops p's VM before it
// drains the host (harvester.UpgradeStopReason), "" when it does not.
func (w *world) upgradeStops(p *placed) (string, error) {
	return harvester.UpgradeStopReason(p.vmi, p.node, w.hostList())
}

// NotMigratable is "LiveMigratable False (REASON)" when the VMI's condition
// is False, the first reason Harvester refuses maintenance mode without
// force; "" otherwise (a VMI without the condition passes).
func NotMigratable(vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionFalse {
			return "LiveMigratable False (" + c.Reason + ")"
		}
	}
	return ""
}
