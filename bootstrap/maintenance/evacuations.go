package maintenance

import (
	"sort"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
)

// evacuationPrefix is the name prefix of KubeVirt's evacuation migrations,
// the only ones Harvester v1.8's pre-drain looks at (upgrade_node.sh
// check_migrations_phase: `[[ "${vmim}" != "kubevirt-evacuation"* ]]`).
const evacuationPrefix = "kubevirt-evacuation"

// failedMigrationReason is what the pre-drain looks for, case-insensitive,
// in the reasons of a migration's Warning events (`grep -i -q
// "failedmigration"` over `kubectl events --for=... --types=warning
// -ojsonpath='{.items[*].reason}'`).
const failedMigrationReason = "failedmigration"

// failedEvacuation is Harvester v1.8's rule in upgrade_node.sh
// (wait_vms_out_or_shutdown, check_migrations_phase "Failed"): every 5 s,
// for each VMI in phase Running on the host being upgraded, it lists the
// migrations of its namespace labelled kubevirt.io/vmi-name=NAME in phase
// Failed; for one named kubevirt-evacuation-* whose Warning events'
// reasons contain "failedmigration" it runs `virtctl stop` on the VM. The
// migration's age does not matter (an evacuation that failed when its
// target host died, and succeeded on the next try, counts). It returns that migration's name
// ("" when none), the first by name.
func failedEvacuation(h *clusterstate.Hosts, vmi *kubevirtv1.VirtualMachineInstance) string {
	var names []string
	for _, m := range h.Migrations {
		if m.Namespace == vmi.Namespace && m.Labels[kubevirtv1.MigrationSelectorLabel] == vmi.Name &&
			m.Status.Phase == kubevirtv1.MigrationFailed && strings.HasPrefix(m.Name, evacuationPrefix) &&
			strings.Contains(strings.ToLower(warningReasons(h, m.Namespace, m.Name)), failedMigrationReason) {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return names[0]
}

// warningReasons are the reasons of the Warning events about migration
// ns/name, space-separated, as `kubectl events --for
// virtualmachineinstancemigration/NAME --types=warning` prints them (it
// selects by the involved object's kind and name in the namespace and
// compares the type case-insensitively).
func warningReasons(h *clusterstate.Hosts, ns, name string) string {
	var out []string
	for _, e := range h.MigrationEvents {
		if e.Namespace == ns && e.InvolvedObject.Kind == clusterstate.KindMigration && e.InvolvedObject.Name == name && strings.EqualFold(e.Type, "warning") {
			out = append(out, e.Reason)
		}
	}
	return strings.Join(out, " ")
}

// evacuationStop is the verdict's why for a VM the pre-drain stops because
// of migration mig; a VMI without a VM cannot be stopped (virtctl stop
// fails, the script goes on) and the pre-drain waits for it forever.
func evacuationStop(p *placed, mig string) (action, why string) {
	if p.vm == nil {
		return Blocks, "its evacuation migration " + mig + " Failed (FailedMigration warning event), but it has no VM: the upgrade's pre-drain's " +
			"virtctl stop fails and it waits for the VMI to leave"
	}
	return ShutDown, "the upgrade's pre-drain stops it (virtctl stop) at once: its evacuation migration " + mig +
		" Failed with a FailedMigration warning event (an earlier one, e.g. whose target host died, counts however old); restoreVM does not start it again " +
		"(deleting that migration before the upgrade avoids the stop)"
}
