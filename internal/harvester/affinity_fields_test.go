package harvester

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDroppedFieldTerms: Harvester v1.8's makeAffinityFromVMTemplate keeps
// a required term only when a match expression whose key neither starts
// network.harvesterhci.io nor is cpumanager remains; a dropped term takes
// its matchFields along.
func TestDroppedFieldTerms(t *testing.T) {
	fields := []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"h1"}}}
	expr := func(key string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpExists}}
	}
	terms := []corev1.NodeSelectorTerm{
		{MatchFields: fields}, // 0: dropped
		{MatchFields: fields, MatchExpressions: expr("kubernetes.io/hostname")},       // 1: kept
		{MatchFields: fields, MatchExpressions: expr("network.harvesterhci.io/mgmt")}, // 2: dropped
		{MatchFields: fields, MatchExpressions: expr("cpumanager")},                   // 3: dropped
		{MatchExpressions: expr("network.harvesterhci.io/mgmt")},                      // 4: no fields: nothing of the user's lost
	}
	aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	if got := DroppedFieldTerms(aff); !slices.Equal(got, []int{0, 2, 3}) {
		t.Errorf("DroppedFieldTerms = %v, want [0 2 3]", got)
	}
	for _, a := range []*corev1.Affinity{nil, {}, {NodeAffinity: &corev1.NodeAffinity{}}} {
		if got := DroppedFieldTerms(a); got != nil {
			t.Errorf("DroppedFieldTerms(%+v) = %v, want none", a, got)
		}
	}
}
