package kv

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestLauncherEviction: expected outcomes worked out from KubeVirt
// v1.7.0's admitLauncherPod (pkg/virt-api/webhooks/validating-webhook/
// admitters/pod-eviction-admitter.go), migrations.VMIEvictionStrategy and
// VMIMigratableOnEviction (pkg/util/migrations/migrations.go) and the
// evacuation controller's filterRunningNonMigratingVMIs
// (pkg/virt-controller/watch/drain/evacuation/evacuation.go).
func TestLauncherEviction(t *testing.T) {
	s := func(v kubevirtv1.EvictionStrategy) *kubevirtv1.EvictionStrategy { return &v }
	lm, ifp, none, ext := s(kubevirtv1.EvictionStrategyLiveMigrate), s(kubevirtv1.EvictionStrategyLiveMigrateIfPossible),
		s(kubevirtv1.EvictionStrategyNone), s(kubevirtv1.EvictionStrategyExternal)
	cases := []struct {
		name            string
		vmi, cluster    *kubevirtv1.EvictionStrategy
		migratable      corev1.ConditionStatus // "" for no condition
		want            Eviction
		wantOnEviction  bool
		wantEvacuatedBy bool
	}{
		{"no strategy anywhere: the eviction passes", nil, nil, corev1.ConditionTrue, ShutsDown, false, false},
		{"cluster LiveMigrate, migratable", nil, lm, corev1.ConditionTrue, Migrates, true, true},
		{"VMI's strategy over the cluster's", none, lm, corev1.ConditionTrue, ShutsDown, false, false},
		{"LiveMigrate, not migratable: denied", lm, nil, corev1.ConditionFalse, Refused, true, false},
		{"LiveMigrate, no condition: denied", lm, nil, "", Refused, true, false},
		{"LiveMigrateIfPossible, migratable", ifp, nil, corev1.ConditionTrue, Migrates, true, true},
		{"LiveMigrateIfPossible, not migratable: passes", ifp, nil, corev1.ConditionFalse, ShutsDown, false, false},
		{"None", none, nil, corev1.ConditionTrue, ShutsDown, false, false},
		{"External: marked, left to another controller", ext, nil, corev1.ConditionTrue, Refused, false, false},
		{"unknown value: passes", s("Sometimes"), nil, corev1.ConditionTrue, ShutsDown, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vmi := &kubevirtv1.VirtualMachineInstance{Spec: kubevirtv1.VirtualMachineInstanceSpec{EvictionStrategy: c.vmi}}
			if c.migratable != "" {
				vmi.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: c.migratable}}
			}
			if got := LauncherEviction(vmi, c.cluster); got != c.want {
				t.Errorf("LauncherEviction = %d, want %d", got, c.want)
			}
			if got := MigratableOnEviction(vmi, c.cluster); got != c.wantOnEviction {
				t.Errorf("MigratableOnEviction = %v, want %v", got, c.wantOnEviction)
			}
			if got := EvacuatedFromDrainedHost(vmi, c.cluster); got != c.wantEvacuatedBy {
				t.Errorf("EvacuatedFromDrainedHost = %v, want %v", got, c.wantEvacuatedBy)
			}
		})
	}
}
