package doctor

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestMaintenanceRow: by KubeVirt's eviction rule, a LiveMigrate VMI that
// is not migratable blocks its host's drain (WARN naming the host and
// pointing to maintenance-check); a LiveMigrateIfPossible one with a vGPU
// is shut down (OK, said).
func TestMaintenanceRow(t *testing.T) {
	s := healthy()
	lm, lmip := kubevirtv1.EvictionStrategyLiveMigrate, kubevirtv1.EvictionStrategyLiveMigrateIfPossible
	set := func(i int, strategy *kubevirtv1.EvictionStrategy, status corev1.ConditionStatus, reason string) {
		v := &s.Harvester.VMIs[i]
		v.Status.NodeName, v.Status.Phase = "harvester-node-"+string(rune('1'+i)), kubevirtv1.Running
		v.Spec.EvictionStrategy = strategy
		v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: "LiveMigratable", Status: status, Reason: reason}}
	}
	set(0, &lm, corev1.ConditionTrue, "")
	set(1, &lmip, corev1.ConditionFalse, "HostDeviceNotLiveMigratable")
	row := Maintenance(s)
	if row.Status != OK || row.Seen != "2 running VMs: none blocks a drain of its host by its eviction strategy; 1 shut down on a drain: guest-a-pool1-x2 (HostDeviceNotLiveMigratable)" {
		t.Errorf("row %+v", row)
	}
	set(1, &lm, corev1.ConditionFalse, "DisksNotLiveMigratable")
	row = Maintenance(s)
	if row.Status != Warn || !strings.Contains(row.Seen, "1 VMs would block a drain of host harvester-node-2: guest-a-pool1-x2 (DisksNotLiveMigratable)") ||
		!strings.Contains(row.Fix, "harvester-bootstrap maintenance-check harvester-node-2") {
		t.Errorf("row %+v", row)
	}
}
