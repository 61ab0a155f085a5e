package hv

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KeyNodeSchedulingRequirementsNotMet is the key of the VMIs no other host
// can take in NonMigratable's map (util.NodeSchedulingRequirementsNotMetKey,
// pkg/util/constants.go).
const KeyNodeSchedulingRequirementsNotMet = "NodeSchedulingRequirementsNotMet"

// NonMigratable is the nodedrain controller's FindNonMigratableVMS
// (pkg/controller/master/nodedrain/nodedrain_controller.go) for the VMIs
// on host, without Longhorn's last-healthy-replica key (the simulator has
// no Longhorn): IdentifyNonMigratableVMS (the reason of every
// LiveMigratable False condition) and CheckVMISchedulingRequirements (no
// other host that isNodeReady matches the VMI's required node affinity
// and then its nodeSelector). Names are namespace/name, sorted.
func NonMigratable(vmis []*kubevirtv1.VirtualMachineInstance, host string, nodes []corev1.Node) (map[string][]string, error) {
	out := map[string][]string{}
	for _, vmi := range vmis {
		for _, c := range vmi.Status.Conditions {
			if c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionFalse {
				out[c.Reason] = append(out[c.Reason], vmi.Namespace+"/"+vmi.Name)
			}
		}
	}
	var valid []*corev1.Node
	for i := range nodes {
		if nodes[i].Name != host && nodeReady(&nodes[i]) {
			valid = append(valid, &nodes[i])
		}
	}
	for _, vmi := range vmis {
		fits, err := someNodeFits(vmi, valid)
		if err != nil {
			return nil, fmt.Errorf("error while checking vmi scheduling requirements: error generating nodeAffinitySelector from node scheduling requirements: %w", err)
		}
		if !fits {
			out[KeyNodeSchedulingRequirementsNotMet] = append(out[KeyNodeSchedulingRequirementsNotMet], vmi.Namespace+"/"+vmi.Name)
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out, nil
}

// someNodeFits: one of nodes matches the VMI's required node affinity
// (parsed whole first, as nodeaffinity.NewNodeSelector does) and then
// its nodeSelector (filterNodesForNodeSelector).
func someNodeFits(vmi *kubevirtv1.VirtualMachineInstance, nodes []*corev1.Node) (bool, error) {
	var sel *nodeaffinity.NodeSelector
	if a := vmi.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		var err error
		if sel, err = nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return false, err
		}
	}
	for _, n := range nodes {
		if sel != nil && !sel.Match(n) {
			continue
		}
		if len(vmi.Spec.NodeSelector) == 0 || labels.SelectorFromSet(vmi.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
			return true, nil
		}
	}
	return false, nil
}

// nodeReady is the nodedrain controller's isNodeReady: schedulable and
// Ready True.
func nodeReady(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

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
