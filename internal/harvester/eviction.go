package harvester

import (
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Eviction is what evicting a VMI's virt-launcher pod does under KubeVirt
// v1.7's pod-eviction admission (pod-eviction-admitter.go), which every
// drain of a Harvester host goes through.
type Eviction int

const (
	// EvictionMigrates: refused with 429; the VMI is marked for
	// evacuation and KubeVirt migrates it.
	EvictionMigrates Eviction = iota
	// EvictionShutsDown: allowed; the pod goes and the guest shuts down.
	EvictionShutsDown
	// EvictionRefused: refused, and nothing moves the VMI (the drain waits).
	EvictionRefused
)

// EvictionOf is the admission's rule by eviction strategy and
// LiveMigratable: LiveMigrate migrates when migratable and is refused
// otherwise; LiveMigrateIfPossible migrates when migratable and lets the
// pod go otherwise; None lets it go; External (another controller's job)
// and any unknown strategy are refused.
func EvictionOf(s kubevirtv1.EvictionStrategy, migratable bool) Eviction {
	switch s {
	case kubevirtv1.EvictionStrategyNone:
		return EvictionShutsDown
	case kubevirtv1.EvictionStrategyLiveMigrate:
		if migratable {
			return EvictionMigrates
		}
		return EvictionRefused
	case kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
		if migratable {
			return EvictionMigrates
		}
		return EvictionShutsDown
	case kubevirtv1.EvictionStrategyExternal:
		return EvictionRefused
	}
	return EvictionShutsDown
}

// EvictionStrategy is the VMI's eviction strategy as KubeVirt resolves
// it, and where it came from: the VMI's, else its VM template's (vm may be
// nil), else KubeVirt's configuration kv (None when it sets none), else,
// kv unknown (nil), LiveMigrate, which Harvester configures.
func EvictionStrategy(vmi *kubevirtv1.VirtualMachineInstance, vm *kubevirtv1.VirtualMachine, kv *kubevirtv1.KubeVirt) (kubevirtv1.EvictionStrategy, string) {
	if s := vmi.Spec.EvictionStrategy; s != nil {
		return *s, "VMI"
	}
	if vm != nil && vm.Spec.Template != nil && vm.Spec.Template.Spec.EvictionStrategy != nil {
		return *vm.Spec.Template.Spec.EvictionStrategy, "VM"
	}
	if kv != nil {
		if s := kv.Spec.Configuration.EvictionStrategy; s != nil {
			return *s, "KubeVirt " + kv.Name
		}
		return kubevirtv1.EvictionStrategyNone, "KubeVirt's default"
	}
	return kubevirtv1.EvictionStrategyLiveMigrate, "Harvester's default"
}

// LiveMigratable is the VMI's LiveMigratable condition; without one,
// status Unknown, which KubeVirt treats as not migratable.
func LiveMigratable(vmi *kubevirtv1.VirtualMachineInstance) (status corev1.ConditionStatus, reason, message string) {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable {
			return c.Status, c.Reason, c.Message
		}
	}
	return corev1.ConditionUnknown, "", "no LiveMigratable condition (KubeVirt treats the VMI as not migratable)"
}
