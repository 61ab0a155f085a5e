package maintenance

import (
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/daemonset"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// podSpec is what the scheduler matches of a VMI's launcher pod.
func podSpec(vmi *kubevirtv1.VirtualMachineInstance) corev1.PodSpec {
	return corev1.PodSpec{NodeSelector: vmi.Spec.NodeSelector, Affinity: vmi.Spec.Affinity, Tolerations: vmi.Spec.Tolerations}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// maintenanceGate is why Harvester v1.8 refuses to put p's host into
// maintenance mode without force (nodedrain controller,
// FindNonMigratableVMS): the VMI's LiveMigratable condition is False, or
// no other Ready, schedulable host matches its required node affinity and
// nodeSelector (NodeSchedulingRequirementsNotMet); with force Harvester
// stops such VMs. "" when neither holds. (Its third reason, a Longhorn
// volume whose last healthy replica is on the host, is not judged.)
func (w *world) maintenanceGate(p *placed, unavailable map[string]bool) string {
	if why := NotMigratable(p.vmi); why != "" {
		return why
	}
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		if name == p.node || unavailable[name] || n.Spec.Unschedulable || !ready(n) {
			continue
		}
		if daemonset.WhyNotSelected(podSpec(p.vmi), n) == "" {
			return ""
		}
	}
	return "no other Ready, schedulable host matches its node affinity and nodeSelector (NodeSchedulingRequirementsNotMet)"
}

// upgradeStops is why Harvester v1.8's upgrade stops p's VM before it
// drains the host (pre-drain: upgrade-helper vm-live-migrate-detector
// --shutdown, GetAllNonLiveMigratableVMINames): one non-witness host only,
// a nodeSelector, host devices (GPUs are not looked at), or no other
// schedulable non-witness host matching its required node affinity. ""
// when none holds.
func (w *world) upgradeStops(p *placed) string {
	var others []*corev1.Node
	hosts := 0
	for _, name := range w.nodeNames() {
		n := w.nodes[name]
		if _, witness := n.Labels[harvester.LabelWitnessHost]; witness {
			continue
		}
		hosts++
		if name != p.node {
			others = append(others, n)
		}
	}
	switch {
	case hosts == 1:
		return "the only host: every VM is stopped"
	case p.vmi.Spec.NodeSelector != nil:
		return "it has a nodeSelector"
	case p.vmi.Spec.Domain.Devices.HostDevices != nil:
		return "it has host devices"
	}
	affinityOnly := corev1.PodSpec{Affinity: p.vmi.Spec.Affinity}
	for _, n := range others {
		if !n.Spec.Unschedulable && daemonset.WhyNotSelected(affinityOnly, n) == "" {
			return ""
		}
	}
	return "no other schedulable host matches its required node affinity"
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
