package hv

import (
	corev1 "k8s.io/api/core/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// NonLiveMigratable is GetAllNonLiveMigratableVMINames
// (pkg/util/virtualmachineinstance/virtualmachineinstance.go), what the
// upgrade's pre-drain (package/upgrade/upgrade_node.sh,
// vm-live-migrate-detector --shutdown) stops: every VMI when one host
// that is not a witness is left; else a VMI with a nodeSelector, with
// host devices, or that migratableByNodeAffinity finds no other host for
// (schedulable, and MatchNodeSelectorTerms of its required node affinity,
// whose terms are parsed lazily). Names are namespace/name, in the order
// of vmis.
func NonLiveMigratable(vmis []*kubevirtv1.VirtualMachineInstance, nodes []corev1.Node) ([]string, error) {
	var hosts []*corev1.Node
	for i := range nodes {
		if _, witness := nodes[i].Labels[LabelWitnessHost]; !witness {
			hosts = append(hosts, &nodes[i])
		}
	}
	var out []string
	for _, vmi := range vmis {
		stop := len(hosts) == 1 || vmi.Spec.NodeSelector != nil || vmi.Spec.Domain.Devices.HostDevices != nil
		if !stop {
			ok, err := migratableByNodeAffinity(vmi, hosts)
			if err != nil {
				return out, err
			}
			stop = !ok
		}
		if stop {
			out = append(out, vmi.Namespace+"/"+vmi.Name)
		}
	}
	return out, nil
}

// migratableByNodeAffinity: some host other than the VMI's is
// schedulable and matches its required node affinity; a term that does
// not parse is an error only when no other term matches.
func migratableByNodeAffinity(vmi *kubevirtv1.VirtualMachineInstance, hosts []*corev1.Node) (bool, error) {
	var terms *corev1.NodeSelector
	if a := vmi.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	migratable := false
	for _, n := range hosts {
		if n.Name == vmi.Status.NodeName || n.Spec.Unschedulable {
			continue
		}
		if terms == nil {
			migratable = true
			continue
		}
		ok, err := schedulingcorev1.MatchNodeSelectorTerms(n, terms)
		if err != nil {
			return false, err
		}
		migratable = migratable || ok
	}
	return migratable, nil
}
