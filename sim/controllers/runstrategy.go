package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// runStrategyToStore is Harvester v1.8's VMController.StoreRunStrategy
// (pkg/controller/master/virtualmachine/vm_controller.go) as a decision:
// the run strategy to write into harvesterhci.io/vmRunStrategy, and
// whether to write it. A VM that is not Halted keeps its run strategy
// there, so that Harvester's VM mutator can give it back when the VM is
// started again (patchRunStrategy, the kubevirt/kubevirt#7295
// workaround), as can the maintenance controller. A VM whose run strategy
// does not decode (both spec.running and spec.runStrategy) is skipped.
func runStrategyToStore(vm *kubevirtv1.VirtualMachine) (kubevirtv1.VirtualMachineRunStrategy, bool) {
	if vm.DeletionTimestamp != nil || vm.Spec.Template == nil {
		return "", false
	}
	rs, err := vm.RunStrategy()
	if err != nil || rs == kubevirtv1.RunStrategyHalted || vm.Annotations[annVMRunStrategy] == string(rs) {
		return "", false
	}
	return rs, true
}

// storeRunStrategy writes the VM's run strategy into its
// harvesterhci.io/vmRunStrategy annotation when Harvester's VM controller
// would.
func (s *sim) storeRunStrategy(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
	rs, ok := runStrategyToStore(vm)
	if !ok {
		return nil
	}
	_, err := s.updateMeta(ctx, gvrVM, vm.Namespace, vm.Name, func(cur *unstructured.Unstructured) bool {
		if cur.GetDeletionTimestamp() != nil || cur.GetAnnotations()[annVMRunStrategy] == string(rs) {
			return false
		}
		ann := cur.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[annVMRunStrategy] = string(rs)
		cur.SetAnnotations(ann)
		return true
	})
	return err
}
