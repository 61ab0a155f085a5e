package harvester

import (
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Topology keys of Harvester hosts. Harvester copies zone and region into
// the VMI annotations of VMs labelled LabelCreator; the cloud provider
// labels guest nodes from them.
const (
	ZoneKey     = corev1.LabelTopologyZone   // topology.kubernetes.io/zone
	RegionKey   = corev1.LabelTopologyRegion // topology.kubernetes.io/region
	HostnameKey = corev1.LabelHostname       // kubernetes.io/hostname
)

// SpreadWeight is the weight of the preferred spread-over-hosts term.
const SpreadWeight = 100

// SpreadTerm selects the VMs of one machine set (their LabelMachineSet
// value) per host: as pod anti-affinity it spreads them over hosts.
func SpreadTerm(machineSet string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelMachineSet: machineSet}},
		TopologyKey:   HostnameKey,
	}
}

// PreferredSpread is SpreadTerm as a soft rule with SpreadWeight.
func PreferredSpread(machineSet string) corev1.WeightedPodAffinityTerm {
	return corev1.WeightedPodAffinityTerm{Weight: SpreadWeight, PodAffinityTerm: SpreadTerm(machineSet)}
}

// ZoneSelector requires hosts in one of regions and one of zones (an empty
// list does not restrict); nil when both are empty.
func ZoneSelector(regions, zones []string) *corev1.NodeSelector {
	var reqs []corev1.NodeSelectorRequirement
	if len(regions) > 0 {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: RegionKey, Operator: corev1.NodeSelectorOpIn, Values: regions})
	}
	if len(zones) > 0 {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: ZoneKey, Operator: corev1.NodeSelectorOpIn, Values: zones})
	}
	if len(reqs) == 0 {
		return nil
	}
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}}
}

// MergeAffinity returns the user's affinity (nil: none) plus the preferred
// spread of machineSet over hosts. The input is not modified; the default
// term is not added twice.
func MergeAffinity(user *corev1.Affinity, machineSet string) *corev1.Affinity {
	out := &corev1.Affinity{}
	if user != nil {
		out = user.DeepCopy()
	}
	if machineSet == "" {
		return out
	}
	term := PreferredSpread(machineSet)
	if out.PodAntiAffinity == nil {
		out.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	for _, t := range out.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if reflect.DeepEqual(t.PodAffinityTerm, term.PodAffinityTerm) {
			return out
		}
	}
	out.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(out.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, term)
	return out
}

// networkKeyPrefix and cpuManagerKey are the node-selector keys Harvester's
// VM mutator owns: it removes them from a VM's required node-selector
// terms and sets its own.
const (
	networkKeyPrefix = "network.harvesterhci.io"
	cpuManagerKey    = "cpumanager"
)

// DroppedFieldTerms are the indexes of affinity's required node-selector
// terms whose matchFields Harvester v1.8's VM mutator throws away:
// makeAffinityFromVMTemplate (pkg/webhook/resources/virtualmachine/
// mutator.go) keeps a term only when a match expression other than its
// own network and cpumanager keys remains, and drops the whole term,
// matchFields included, otherwise. Such a term no longer restricts the VM.
func DroppedFieldTerms(affinity *corev1.Affinity) []int {
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var out []int
	for i, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchFields) > 0 && !slices.ContainsFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
			return !strings.HasPrefix(r.Key, networkKeyPrefix) && r.Key != cpuManagerKey
		}) {
			out = append(out, i)
		}
	}
	return out
}
