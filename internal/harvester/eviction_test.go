package harvester

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestEvictionOf: KubeVirt v1.7's pod-eviction admitter for virt-launcher
// pods (admitLauncherPod) and its evacuation controller's candidates
// (VMIMigratableOnEviction, then LiveMigratable True), written out by hand
// from that source.
func TestEvictionOf(t *testing.T) {
	for _, tc := range []struct {
		strategy   kubevirtv1.EvictionStrategy
		migratable bool
		want       Eviction
	}{
		{kubevirtv1.EvictionStrategyLiveMigrate, true, EvictionMigrates},
		{kubevirtv1.EvictionStrategyLiveMigrate, false, EvictionRefused},
		{kubevirtv1.EvictionStrategyLiveMigrateIfPossible, true, EvictionMigrates},
		{kubevirtv1.EvictionStrategyLiveMigrateIfPossible, false, EvictionShutsDown},
		{kubevirtv1.EvictionStrategyNone, true, EvictionShutsDown},
		{kubevirtv1.EvictionStrategyNone, false, EvictionShutsDown},
		{kubevirtv1.EvictionStrategyExternal, true, EvictionRefused},
		{kubevirtv1.EvictionStrategyExternal, false, EvictionRefused},
		{"Sideways", true, EvictionShutsDown}, // the admitter's switch has no case for it
	} {
		if got := EvictionOf(tc.strategy, tc.migratable); got != tc.want {
			t.Errorf("EvictionOf(%s, migratable %v) = %d, want %d", tc.strategy, tc.migratable, got, tc.want)
		}
	}
}

// TestEvictionStrategy: the VMI's, else the VM template's, else
// KubeVirt's configuration (None when unset), else Harvester's LiveMigrate.
func TestEvictionStrategy(t *testing.T) {
	ifp, ext := kubevirtv1.EvictionStrategyLiveMigrateIfPossible, kubevirtv1.EvictionStrategyExternal
	vmi := &kubevirtv1.VirtualMachineInstance{}
	withStrategy := &kubevirtv1.VirtualMachineInstance{Spec: kubevirtv1.VirtualMachineInstanceSpec{EvictionStrategy: &ext}}
	vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{EvictionStrategy: &ifp}}}}
	kvSet := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}
	kvSet.Spec.Configuration.EvictionStrategy = &ext
	kvUnset := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}
	for _, tc := range []struct {
		vmi        *kubevirtv1.VirtualMachineInstance
		vm         *kubevirtv1.VirtualMachine
		kv         *kubevirtv1.KubeVirt
		want, from string
	}{
		{withStrategy, vm, kvUnset, "External", "VMI"},
		{vmi, vm, kvSet, "LiveMigrateIfPossible", "VM"},
		{vmi, nil, kvSet, "External", "KubeVirt kubevirt"},
		{vmi, nil, kvUnset, "None", "KubeVirt's default"},
		{vmi, nil, nil, "LiveMigrate", "Harvester's default"},
	} {
		got, from := EvictionStrategy(tc.vmi, tc.vm, tc.kv)
		if string(got) != tc.want || from != tc.from {
			t.Errorf("EvictionStrategy = %s (%s), want %s (%s)", got, from, tc.want, tc.from)
		}
	}
	if st, _, _ := LiveMigratable(vmi); st != corev1.ConditionUnknown {
		t.Errorf("LiveMigratable without a condition = %s, want Unknown", st)
	}
}
