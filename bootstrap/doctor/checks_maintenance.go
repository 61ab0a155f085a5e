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

// Maintenance: what a drain of their hosts does to the cluster's running
// VMIs, by KubeVirt's eviction rule alone (maintenance.Evict: strategy and
// LiveMigratable; no request beyond the snapshot, so no host, room or
// affinity, and KubeVirt's configured default is not read):
// `maintenance-check` judges the rest. WARN when one would block.
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
		switch v.Action {
		case maintenance.Blocks:
			blocks[vmi.Status.NodeName] = append(blocks[vmi.Status.NodeName], why)
		case maintenance.ShutDown:
			down = append(down, why)
		}
	}
	shut := ""
	if len(down) > 0 {
		shut = fmt.Sprintf("; %d shut down on a drain: %s", len(down), names(down))
	}
	if len(blocks) == 0 {
		return ok(CheckMaintenance, fmt.Sprintf("%d running VMs: none blocks a drain of its host by its eviction strategy%s", running, shut))
	}
	hosts := make([]string, 0, len(blocks))
	var parts []string
	for host := range blocks {
		hosts = append(hosts, host)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		parts = append(parts, fmt.Sprintf("%d VMs would block a drain of host %s: %s", len(blocks[host]), host, names(blocks[host])))
	}
	return warn(CheckMaintenance, strings.Join(parts, "; ")+shut,
		fmt.Sprintf("run `harvester-bootstrap maintenance-check %s` (or --upgrade) before maintenance or a Harvester upgrade: it also judges room, affinity and quorum", strings.Join(hosts, " ")))
}
