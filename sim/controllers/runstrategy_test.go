package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestRunStrategyToStore: Harvester v1.8's StoreRunStrategy
// (pkg/controller/master/virtualmachine/vm_controller.go) stores every run
// strategy but Halted, once, and skips VMs being deleted, without a
// template, or whose run strategy does not decode (vm.RunStrategy's
// error for spec.running together with spec.runStrategy).
func TestRunStrategyToStore(t *testing.T) {
	strategy := func(rs kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachineRunStrategy { return &rs }
	running := func(b bool) *bool { return &b }
	now := metav1.Now()
	for _, c := range []struct {
		name    string
		spec    kubevirtv1.VirtualMachineSpec
		stored  string
		deleted bool
		want    kubevirtv1.VirtualMachineRunStrategy
		store   bool
	}{
		{name: "Always, none stored", spec: kubevirtv1.VirtualMachineSpec{RunStrategy: strategy(kubevirtv1.RunStrategyAlways)}, want: kubevirtv1.RunStrategyAlways, store: true},
		{name: "Manual over RerunOnFailure", spec: kubevirtv1.VirtualMachineSpec{RunStrategy: strategy(kubevirtv1.RunStrategyManual)}, stored: "RerunOnFailure", want: kubevirtv1.RunStrategyManual, store: true},
		{name: "already stored", spec: kubevirtv1.VirtualMachineSpec{RunStrategy: strategy(kubevirtv1.RunStrategyRerunOnFailure)}, stored: "RerunOnFailure"},
		{name: "Halted is never stored", spec: kubevirtv1.VirtualMachineSpec{RunStrategy: strategy(kubevirtv1.RunStrategyHalted)}, stored: "Always"},
		{name: "spec.running true is Always", spec: kubevirtv1.VirtualMachineSpec{Running: running(true)}, want: kubevirtv1.RunStrategyAlways, store: true},
		{name: "spec.running false is Halted", spec: kubevirtv1.VirtualMachineSpec{Running: running(false)}},
		{name: "both fields", spec: kubevirtv1.VirtualMachineSpec{Running: running(true), RunStrategy: strategy(kubevirtv1.RunStrategyAlways)}},
		{name: "being deleted", spec: kubevirtv1.VirtualMachineSpec{RunStrategy: strategy(kubevirtv1.RunStrategyAlways)}, deleted: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			vm := &kubevirtv1.VirtualMachine{Spec: c.spec}
			vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
			if c.stored != "" {
				vm.Annotations = map[string]string{annVMRunStrategy: c.stored}
			}
			if c.deleted {
				vm.DeletionTimestamp = &now
			}
			got, store := runStrategyToStore(vm)
			if got != c.want || store != c.store {
				t.Errorf("runStrategyToStore = %q, %v; want %q, %v", got, store, c.want, c.store)
			}
		})
	}
	noTemplate := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: strategy(kubevirtv1.RunStrategyAlways)}}
	if _, store := runStrategyToStore(noTemplate); store {
		t.Error("a VM without a template is stored")
	}
}
