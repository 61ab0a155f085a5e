package maintenance

import (
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// When a VM that maintenance stopped for its maintain-mode strategy is
// started again (VM.Restart).
const (
	RestartOnEnable  = "when the host's maintenance completes"
	RestartOnDisable = "when maintenance mode is disabled"
	RestartNever     = "never"
)

// restartOf is when Harvester v1.8 starts a VM again that maintenance
// stopped for strategy s (read on its VMI). The nodedrain controller
// annotates the VM with the host (harvesterhci.io/maintain-mode-strategy-node-name)
// for the two restarting strategies of the VMI's label; the restarts then
// select VMs by the VM's own label: the maintain controller
// (pkg/controller/master/node/maintain_controller.go), once no VMI is left
// on the host, those labelled ShutdownAndRestartAfterEnable, with the run
// strategy saved in harvesterhci.io/vmRunStrategy (else RerunOnFailure),
// so on another host; the node action disableMaintenanceMode
// (pkg/api/node/formatter.go, the start subresource) those labelled
// ShutdownAndRestartAfterDisable. A VM whose label differs from its VMI's
// is restarted by its own label's rule, or never. Both restarts look for
// the annotation, which only the unforced path writes.
func restartOf(s string, vm *kubevirtv1.VirtualMachine) string {
	if !harvester.MaintainModeAnnotated(s) || vm == nil {
		return RestartNever
	}
	switch vm.Labels[harvester.LabelMaintainModeStrategy] {
	case harvester.MaintainModeShutdownAndRestartAfterEnable:
		return RestartOnEnable
	case harvester.MaintainModeShutdownAndRestartAfterDisable:
		return RestartOnDisable
	}
	return RestartNever
}

// launcherLabels are the labels of p's virt-launcher pod on its host, the
// pod the drain looks at; without one in the snapshot (pods not listed, or
// a pod the check's own moves would make) the VMI's labels, which KubeVirt
// copies into a new launcher pod.
func (w *world) launcherLabels(p *placed) map[string]string {
	for i := range w.h.Pods {
		pod := &w.h.Pods[i]
		if pod.Spec.NodeName == p.node && pod.DeletionTimestamp == nil &&
			pod.Labels[kubevirtv1.AppLabel] == "virt-launcher" && pod.Labels[kubevirtv1.CreatedByLabel] == string(p.vmi.UID) {
			return pod.Labels
		}
	}
	return p.vmi.Labels
}

// maintainMode applies the maintain-mode strategy rules of Harvester
// v1.8's maintenance mode to v (p's verdict so far, after the
// non-migratable gate passed) and reports whether it decided the verdict;
// it names the strategy on v in any case. Each rule reads the object
// Harvester's code reads: the stop list the VMI's label
// (MaintainModeStrategy), the drain filter the launcher pod's
// (DrainSkipsPod), the restarts the VM's (restartOf).
//
// Without force (nodedrain controller OnNodeChange): the VMs of the
// host's VMIs labelled with a shutdown strategy are stopped (findAndStopVM:
// runStrategy Halted) before the drain, after the restarting ones are
// annotated with the host. With force only the non-migratable VMs are
// stopped (the strategy is overridden). Either way the drain never evicts
// a pod maintainModeStrategyFilter skips: a VM left running with such a
// pod (forced, or relabelled after its pod was made) keeps running on the
// host, and the maintain controller, which waits until no VMI is left,
// never sets maintain-status completed.
func (w *world) maintainMode(p *placed, o Options, v *VM) bool {
	s := harvester.MaintainModeStrategy(p.vmi)
	skipped := harvester.DrainSkipsPod(w.launcherLabels(p))
	v.MaintainModeStrategy = s
	label := "maintain-mode-strategy " + s + " (label " + harvester.LabelMaintainModeStrategy + ")"
	switch {
	case s == "" && !skipped:
		return false
	case s == "" || o.Force:
		return w.leftRunning(p, o, v, label, skipped)
	case harvester.VMOwnerOf(p.vmi) == "":
		v.Action, v.Why = Blocks, label+": Harvester's nodedrain controller fails on the host: no valid VM owner found for VMI "+p.vmi.Name
		return true
	}
	v.Action, v.Restart = ShutDown, restartOf(s, p.vm)
	v.Why = label + ": Harvester stops it (runStrategy Halted) instead of migrating it; started again: " + v.Restart
	if v.Restart == RestartOnDisable {
		v.Why += w.afterDisable(p.vmi.Status.NodeName, v)
	}
	return true
}

// leftRunning is the verdict on a VM Harvester does not stop for its
// strategy (forced maintenance, or a VMI without a shutdown strategy):
// the drain evicts its launcher pod unless maintainModeStrategyFilter
// skips it (skipped), and then the VM blocks the maintenance.
func (w *world) leftRunning(p *placed, o Options, v *VM, label string, skipped bool) bool {
	if !skipped {
		// A label given to a running VM does not reach its pod.
		v.Why = label + ": forced maintenance does not stop it, and its launcher pod lacks the labels maintainModeStrategyFilter " +
			"skips, so the drain evicts it: " + v.Why
		return false
	}
	const stays = "the drain never evicts its launcher pod (maintainModeStrategyFilter): it keeps running on the host, " +
		"maintain-status stays running and never completed"
	v.Action = Blocks
	pod := w.launcherLabels(p)[harvester.LabelMaintainModeStrategy]
	if o.Force {
		if v.MaintainModeStrategy == "" {
			label = "its launcher pod's maintain-mode-strategy " + pod
		}
		v.Why = label + ": forced maintenance stops only the VMs Harvester would refuse maintenance for, and " + stays
		return true
	}
	v.Why = "its launcher pod is labelled maintain-mode-strategy " + pod + " but its VMI is not (relabelled after the pod was made: " +
		"KubeVirt does not copy labels to a running pod): Harvester stops only the VMs whose VMI carries a shutdown strategy, and " + stays
	return true
}

// afterDisable is what v1.8's disableMaintenanceMode really does to the
// ShutdownAndRestartAfterDisable VMs of host: for the first it lists it
// calls KubeVirt's start subresource (a patch of the VM), then updates
// the VM it listed from its cache to drop the annotation; that update
// carries the resourceVersion from before the start, kube-apiserver
// refuses it (conflict) and the action returns the error. So one such VM
// runs again (keeping its annotation) and any other stays off. It sets
// v.Restart when there are several and returns the note for v.Why.
func (w *world) afterDisable(host string, v *VM) string {
	n := w.afterDisableCount(host)
	if n > 1 {
		v.Restart = fmt.Sprintf("for one of the host's %d such VMs only, when maintenance mode is disabled", n)
		return fmt.Sprintf(" (disableMaintenanceMode starts the first of the host's %d it lists, in no set order, then its update of that VM "+
			"conflicts with the start and the action fails: the others stay off)", n)
	}
	return " (disableMaintenanceMode then fails: its update of the VM conflicts with the start, the VM keeps its annotation " +
		harvester.AnnMaintainModeStrategyNodeName + ")"
}

// afterDisableCount is how many VMs disableMaintenanceMode would look at
// for host: the ShutdownAndRestartAfterDisable VMIs on it, which the
// nodedrain controller annotates, and the VMs annotated with it already.
func (w *world) afterDisableCount(host string) int {
	seen := map[string]bool{}
	for _, p := range w.vmis {
		if p.vmi.Status.NodeName == host && restartOf(harvester.MaintainModeStrategy(p.vmi), p.vm) == RestartOnDisable {
			seen[p.vmi.Namespace+"/"+p.vmi.Name] = true
		}
	}
	for _, vm := range w.h.VMs {
		if vm.Labels[harvester.LabelMaintainModeStrategy] == harvester.MaintainModeShutdownAndRestartAfterDisable &&
			vm.Annotations[harvester.AnnMaintainModeStrategyNodeName] == host {
			seen[vm.Namespace+"/"+vm.Name] = true
		}
	}
	return len(seen)
}

// overridden is what forced maintenance does to a labelled VM it stops as
// non-migratable: it is not annotated with the host, so never restarted.
func overridden(p *placed, v *VM) string {
	s := harvester.MaintainModeStrategy(p.vmi)
	if s == "" {
		return ""
	}
	v.MaintainModeStrategy, v.Restart = s, RestartNever
	return "; force overrides its maintain-mode-strategy " + s + ": never started again"
}
