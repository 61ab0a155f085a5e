package doctor

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestMaintenanceRow: Harvester refuses maintenance mode without force
// while a VMI on the host has LiveMigratable False, whatever its strategy
// (WARN naming the host, pointing to maintenance-check); a VMI with
// strategy None is shut down by the drain (named in the OK row).
func TestMaintenanceRow(t *testing.T) {
	s := healthy()
	lm, lmip, none := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyLiveMigrateIfPossible, kubevirtv1.EvictionStrategyNone
	set := func(i int, strategy *kubevirtv1.EvictionStrategy, status corev1.ConditionStatus, reason string) {
		v := &s.Harvester.VMIs[i]
		v.Status.NodeName, v.Status.Phase = "harvester-node-"+string(rune('1'+i)), kubevirtv1.Running
		v.Spec.EvictionStrategy = strategy
		v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: "LiveMigratable", Status: status, Reason: reason}}
	}
	set(0, &lm, corev1.ConditionTrue, "")
	set(1, &none, corev1.ConditionTrue, "")
	row := Maintenance(s)
	if row.Status != OK || row.Seen != "2 running VMs: none blocks maintenance of its host by its LiveMigratable condition or eviction strategy; 1 shut down by a drain: guest-a-pool1-x2" {
		t.Errorf("row %+v", row)
	}
	for _, c := range []struct {
		strategy *kubevirtv1.EvictionStrategy
		reason   string
	}{{&lmip, "HostDeviceNotLiveMigratable"}, {&lm, "DisksNotLiveMigratable"}} {
		set(1, c.strategy, corev1.ConditionFalse, c.reason)
		row = Maintenance(s)
		if row.Status != Warn || row.Seen != "1 VMs would block maintenance of host harvester-node-2: guest-a-pool1-x2 ("+c.reason+")" ||
			!strings.Contains(row.Fix, "harvester-bootstrap maintenance-check harvester-node-2") {
			t.Errorf("%s: row %+v", c.reason, row)
		}
	}
}
