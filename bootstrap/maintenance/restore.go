package maintenance

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// labelUpgradeRepo marks Harvester's upgrade repository VM, which
// vm-live-migrate-detector never lists for restoring
// (pkg/upgradehelper/vmlivemigratedetector getRestoreVMNames).
const labelUpgradeRepo = "harvesterhci.io/upgrade"

// notRestored is why Harvester v1.8 does not start p's VM again after the
// upgrade of its host although the upgrade-config setting has restoreVM
// true; "" when it does. vm-live-migrate-detector lists in the ConfigMap
// <upgrade>-restore-vm (harvester-system, one key per host) the VMs it
// stops except a paused VMI (condition Paused True) and the upgrade
// repository VM (getRestoreVMNames); the upgrade's job controller starts
// a restore-vm job for the host once its post-drain completed, except on
// a witness host (sendRestoreVMJob); the job starts each listed VM
// (pkg/upgradehelper/restorevm: virtClient Start).
func notRestored(p *placed, host *corev1.Node) string {
	for _, c := range p.vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstancePaused && c.Status == corev1.ConditionTrue {
			return "its VMI is paused (vm-live-migrate-detector does not list paused VMs)"
		}
	}
	if p.vmi.Labels[labelUpgradeRepo] != "" {
		return "it is the upgrade repository VM"
	}
	if host != nil {
		if _, ok := host.Labels[harvester.LabelWitnessHost]; ok {
			return "its host is a witness host (no restore-vm job)"
		}
	}
	return ""
}

// detectorStop is the verdict on a VM vm-live-migrate-detector stops (why:
// its rule), with the restore-VM option o.RestoreVM: restored reports
// whether it is started again after its host.
func (w *world) detectorStop(p *placed, why string, o Options) (text string, restored bool) {
	text = "the upgrade's pre-drain stops it: " + why
	if !o.RestoreVM {
		return text + "; it stays down (without restoreVM in the upgrade-config setting nothing starts it again)", false
	}
	if r := notRestored(p, w.nodes[p.node]); r != "" {
		return text + "; restoreVM does not start it again: " + r, false
	}
	return text + "; restoreVM starts it again once " + p.node + " is upgraded (restore-vm job; the check puts it back on " + p.node +
		" before the next host, which the job races with)", true
}

// restoreStopped brings back the VMs restoreVM starts after the step
// (drain recorded them): up again, on the host they were stopped on.
func (w *world) restoreStopped() {
	for _, p := range w.restoring {
		p.down = false
	}
	w.restoring = nil
}

// upgradeRefusal is Harvester v1.8's upgrade webhook
// (pkg/webhook/resources/upgrade/validator.go checkNonLiveMigratableVMs):
// without restoreVM in the upgrade-config setting, and with more than one
// non-witness host, it refuses to create the Upgrade while any VMI is
// non-live-migratable by GetAllNonLiveMigratableVMINames (the rule
// vm-live-migrate-detector stops by). "" when it does not refuse. Only
// the VMIs the snapshot holds are judged (all of them, of any cluster).
func (w *world) upgradeRefusal(o Options) string {
	if !o.Upgrade || o.RestoreVM {
		return ""
	}
	hosts := w.hostList()
	nonWitness := 0
	for _, n := range hosts {
		if _, ok := n.Labels[harvester.LabelWitnessHost]; !ok {
			nonWitness++
		}
	}
	if nonWitness == 1 {
		return ""
	}
	var names []string
	for _, p := range w.vmis {
		if why, err := harvester.UpgradeStopReason(p.vmi, p.node, hosts); err == nil && why != "" {
			names = append(names, p.vmi.Namespace+"/"+p.vmi.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return fmt.Sprintf("There are non-live migratable VMs that need to be shut off before initiating the upgrade: %s "+
		"(Harvester's upgrade webhook, without restoreVM in the upgrade-config setting; the rows below are what happens to VMs started after the Upgrade was created)",
		strings.Join(names, ", "))
}

// restoreVMOption is the restore-VM option in force: o.RestoreVM, or
// restoreVM true in the upgrade-config setting's value (Harvester's
// util.IsRestoreVM: the value, else the default, decoded as JSON). A note
// says when the setting turned it on, or could not be read as JSON (then
// Harvester's job controller restores nothing and its upgrade webhook
// refuses the Upgrade with the decoding error).
func restoreVMOption(setting string, o Options) (bool, string) {
	if !o.Upgrade || setting == "" {
		return o.RestoreVM, ""
	}
	var cfg struct {
		RestoreVM bool `json:"restoreVM"`
	}
	if err := json.Unmarshal([]byte(setting), &cfg); err != nil {
		return o.RestoreVM, "the setting " + harvester.SettingUpgradeConfig + " is not JSON Harvester can read (" + err.Error() +
			"): its upgrade webhook refuses the Upgrade and nothing is restored"
	}
	if cfg.RestoreVM && !o.RestoreVM {
		return true, "restoreVM is true in the setting " + harvester.SettingUpgradeConfig + ": judged with the restore-VM option"
	}
	return o.RestoreVM, ""
}
