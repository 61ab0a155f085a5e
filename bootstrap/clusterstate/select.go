package clusterstate

import (
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// ClusterSelector selects the driver's objects (VMs, VMIs, cloud-init
// Secrets, volumes) of the guest cluster.
func (t Target) ClusterSelector() string {
	return harvester.LabelGuestCluster + "=" + harvester.LabelValue(t.Cluster)
}

// OfCluster reports whether labels carry the cluster's guest-cluster label.
func (t Target) OfCluster(labels map[string]string) bool {
	return labels[harvester.LabelGuestCluster] == harvester.LabelValue(t.Cluster)
}

// ClusterVMs are the VMs labelled with the guest cluster's name.
func (h *Harvester) ClusterVMs() []kubevirtv1.VirtualMachine { return ofCluster(h.Target, h.VMs) }

// ofCluster are the VMs of vms labelled with t's cluster name.
func ofCluster(t Target, vms []kubevirtv1.VirtualMachine) []kubevirtv1.VirtualMachine {
	var out []kubevirtv1.VirtualMachine
	for _, vm := range vms {
		if t.OfCluster(vm.Labels) {
			out = append(out, vm)
		}
	}
	return out
}

// VMI returns the VMI called name, or nil.
func (h *Harvester) VMI(name string) *kubevirtv1.VirtualMachineInstance {
	for i := range h.VMIs {
		if h.VMIs[i].Name == name {
			return &h.VMIs[i]
		}
	}
	return nil
}

// Failed returns the listing error of kind, or "".
func (h *Harvester) Failed(kind string) string { return h.Errors[kind] }
