// Package kv holds the KubeVirt v1.7.0 rules the simulator plays until
// KubeVirt's own controllers run in it, each written from KubeVirt's
// source in the module cache (kubevirt.io/kubevirt@v1.7.0) and naming the
// file and function it reads. The product never imports it: the simulator
// is nobody's oracle but KubeVirt's and Harvester's (docs/layout.md).
package kv

import (
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Eviction is what the eviction of a VMI's virt-launcher pod comes to.
type Eviction int

const (
	// Migrates: the eviction is denied, the VMI is marked for evacuation
	// and the evacuation controller migrates it.
	Migrates Eviction = iota
	// ShutsDown: the eviction passes; the pod goes and the guest with it.
	ShutsDown
	// Refused: the eviction is denied and nothing migrates the VMI, so a
	// drain retries for ever.
	Refused
)

// DefaultEvictionStrategy is KubeVirt's cluster-wide eviction strategy
// when the KubeVirt CR sets none (pkg/virt-config/configuration.go,
// defaultClusterConfig: EvictionStrategyNone).
const DefaultEvictionStrategy = kubevirtv1.EvictionStrategyNone

// EvictionStrategy is migrations.VMIEvictionStrategy
// (pkg/util/migrations/migrations.go): the VMI's own strategy, else the
// cluster's (nil when neither is set).
func EvictionStrategy(vmi *kubevirtv1.VirtualMachineInstance, cluster *kubevirtv1.EvictionStrategy) *kubevirtv1.EvictionStrategy {
	if vmi.Spec.EvictionStrategy != nil {
		return vmi.Spec.EvictionStrategy
	}
	return cluster
}

// Migratable is vmi.IsMigratable (kubevirt.io/api core/v1 types.go): the
// LiveMigratable condition is True.
func Migratable(vmi *kubevirtv1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// LauncherEviction is PodEvictionAdmitter.admitLauncherPod
// (pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go)
// followed by what the evacuation controller does with a VMI it marks:
// no strategy passes; LiveMigrate denies a VMI that is not migratable and
// marks one that is; LiveMigrateIfPossible marks a migratable VMI and
// passes the others; External marks the VMI, which the evacuation
// controller then leaves to another controller (MigratableOnEviction);
// None and any other value pass.
func LauncherEviction(vmi *kubevirtv1.VirtualMachineInstance, cluster *kubevirtv1.EvictionStrategy) Eviction {
	s := EvictionStrategy(vmi, cluster)
	if s == nil {
		return ShutsDown
	}
	marked := false
	switch *s {
	case kubevirtv1.EvictionStrategyLiveMigrate:
		if !Migratable(vmi) {
			return Refused
		}
		marked = true
	case kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
		marked = Migratable(vmi)
	case kubevirtv1.EvictionStrategyExternal:
		marked = true
	}
	switch {
	case !marked:
		return ShutsDown
	case EvacuatedFromDrainedHost(vmi, cluster):
		return Migrates
	}
	return Refused
}

// MigratableOnEviction is migrations.VMIMigratableOnEviction
// (pkg/util/migrations/migrations.go): the strategy is LiveMigrate, or
// LiveMigrateIfPossible and the VMI is migratable.
func MigratableOnEviction(vmi *kubevirtv1.VirtualMachineInstance, cluster *kubevirtv1.EvictionStrategy) bool {
	s := EvictionStrategy(vmi, cluster)
	if s == nil {
		return false
	}
	switch *s {
	case kubevirtv1.EvictionStrategyLiveMigrate:
		return true
	case kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
		return Migratable(vmi)
	}
	return false
}

// EvacuatedFromDrainedHost is the evacuation controller's choice on a
// host tainted kubevirt.io/drain or for a VMI marked for evacuation
// (pkg/virt-controller/watch/drain/evacuation/evacuation.go,
// filterRunningNonMigratingVMIs): it migrates a VMI that wants to migrate
// on eviction and whose LiveMigratable condition is True.
func EvacuatedFromDrainedHost(vmi *kubevirtv1.VirtualMachineInstance, cluster *kubevirtv1.EvictionStrategy) bool {
	return MigratableOnEviction(vmi, cluster) && Migratable(vmi)
}
