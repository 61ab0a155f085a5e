package driver

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	hostnameTopologyKey = "kubernetes.io/hostname"
	spreadWeight        = 100
)

// MergeAffinity returns the user's affinity (nil: none) plus a preferred
// pod anti-affinity that spreads the VMs of one machine set over hosts. The
// input is not modified; the default term is not added twice.
func MergeAffinity(user *corev1.Affinity, machineSet string) *corev1.Affinity {
	out := &corev1.Affinity{}
	if user != nil {
		out = user.DeepCopy()
	}
	if machineSet == "" {
		return out
	}
	term := corev1.WeightedPodAffinityTerm{
		Weight: spreadWeight,
		PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelMachineSet: machineSet}},
			TopologyKey:   hostnameTopologyKey,
		},
	}
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
