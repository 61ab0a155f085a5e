package harvester

import (
	"slices"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// MaintainModeStrategy is the maintain-mode strategy Harvester v1.8's
// nodedrain controller acts on for vmi, "" for none (Migrate, the default,
// an invalid value, or no label): listVMILabelMaintainModeStrategy selects
// the VMIs of the host whose label LabelMaintainModeStrategy is one of
// MaintainModeShutdownValues (case-sensitive), and reads nothing else: not
// the VM's label (Harvester's VM controller copies it to the VMI when it
// changes, but a VMI labelled by hand keeps its own), not the launcher
// pod's (DrainSkipsPod).
func MaintainModeStrategy(vmi *kubevirtv1.VirtualMachineInstance) string {
	if v := vmi.Labels[LabelMaintainModeStrategy]; slices.Contains(MaintainModeShutdownValues, v) {
		return v
	}
	return ""
}

// MaintainModeAnnotated says whether the nodedrain controller annotates
// the VM of a VMI with strategy s (MaintainModeStrategy) with the host
// (AnnMaintainModeStrategyNodeName) before it stops it: only for the two
// strategies that restart, read on the VMI.
func MaintainModeAnnotated(s string) bool {
	return s == MaintainModeShutdownAndRestartAfterEnable || s == MaintainModeShutdownAndRestartAfterDisable
}

// DrainSkipsPod is Harvester v1.8's drain filter maintainModeStrategyFilter
// (pkg/util/drainhelper/helper.go) on a pod's labels: a pod labelled
// harvesterhci.io/vmName whose LabelMaintainModeStrategy is one of
// MaintainModeShutdownValues is never evicted, and the drain does not wait
// for it. KubeVirt copies the VMI's labels into its virt-launcher pod when
// it makes the pod and keeps only kubevirt.io/nodeName and its own labels
// in sync after, so a label given to a running VM does not reach its pod.
func DrainSkipsPod(podLabels map[string]string) bool {
	if _, ok := podLabels[LabelVMName]; !ok {
		return false
	}
	v, ok := podLabels[LabelMaintainModeStrategy]
	return ok && slices.Contains(MaintainModeShutdownValues, v)
}

// VMOwnerOf is Harvester v1.8's findVM (nodedrain controller): the name
// of the VMI's owner of kind VirtualMachine, apiVersion kubevirt.io/v1,
// "" when it has none (the controller then fails on the host with "no
// valid VM owner found for VMI NAME").
func VMOwnerOf(vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, o := range vmi.OwnerReferences {
		if o.Kind == "VirtualMachine" && o.APIVersion == "kubevirt.io/v1" {
			return o.Name
		}
	}
	return ""
}
