package doctor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/maintenance"
)

// CheckMaintenance is the name of the maintenance summary row.
const CheckMaintenance = "maintenance"

// Maintenance: what maintenance mode of their hosts does to the cluster's
// running VMIs, judged from the VMIs alone (no request beyond the
// snapshot): Harvester refuses it without force for a VMI whose
// LiveMigratable is False (maintenance.NotMigratable), and KubeVirt's
// eviction rule (maintenance.Evict) blocks or shuts down the others by
// their strategy. Hosts, room and affinity are `maintenance-check`'s.
// WARN when one would block.
func Maintenance(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckMaintenance, clusterstate.KindVM, clusterstate.KindVMI); bad {
		return row
	}
	blocks := map[string][]string{} // host -> VMs
	var down []string
	running := 0
	for _, vm := range h.ClusterVMs() {
		vmi := h.VMI(vm.Name)
		if vmi == nil || vmi.Status.NodeName == "" || vmi.IsFinal() {
			continue
		}
		running++
		v := maintenance.Evict(vmi, &vm, nil)
		why := vm.Name
		if v.Reason != "" {
			why += " (" + v.Reason + ")"
		}
		switch {
		case maintenance.NotMigratable(vmi) != "":
			// Harvester refuses maintenance mode without force.
			blocks[vmi.Status.NodeName] = append(blocks[vmi.Status.NodeName], why)
		case v.Action == maintenance.Blocks:
			blocks[vmi.Status.NodeName] = append(blocks[vmi.Status.NodeName], why)
		case v.Action == maintenance.ShutDown:
			down = append(down, why)
		}
	}
	shut := ""
	if len(down) > 0 {
		shut = fmt.Sprintf("; %d shut down by a drain: %s", len(down), names(down))
	}
	if len(blocks) == 0 {
		return ok(CheckMaintenance, fmt.Sprintf("%d running VMs: none blocks maintenance of its host by its LiveMigratable condition or eviction strategy%s", running, shut))
	}
	hosts := make([]string, 0, len(blocks))
	var parts []string
	for host := range blocks {
		hosts = append(hosts, host)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		parts = append(parts, fmt.Sprintf("%d VMs would block maintenance of host %s: %s", len(blocks[host]), host, names(blocks[host])))
	}
	return warn(CheckMaintenance, strings.Join(parts, "; ")+shut,
		fmt.Sprintf("run `harvester-bootstrap maintenance-check %s` (or --upgrade) before maintenance or a Harvester upgrade: Harvester refuses maintenance mode without force while a VM's LiveMigratable is False (forced, it stops the VM); maintenance-check also judges room, affinity and quorum", strings.Join(hosts, " ")))
}
