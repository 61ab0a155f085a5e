package config

import (
	"strings"
	"testing"
)

// TestAffinityOfMatchFieldsAloneRefused: a required term of matchFields
// alone would be dropped by Harvester's VM webhook, so the flag is refused,
// named as typed, with what to do instead; a term that also has a match
// expression is taken.
func TestAffinityOfMatchFieldsAloneRefused(t *testing.T) {
	const fieldsOnly = `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[` +
		`{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"Exists"}]},` +
		`{"matchFields":[{"key":"metadata.name","operator":"In","values":["harvester-node-1"]}]}]}}}`
	_, errs := ParseInputsByFlag(Config{VMAffinity: fieldsOnly})
	if errs.Affinity == nil || !strings.Contains(errs.Affinity.Error(), "--"+FlagVMAffinity) ||
		!strings.Contains(errs.Affinity.Error(), "terms [1] have matchFields but no matchExpressions") {
		t.Errorf("affinity error %v, want --%s naming term [1]", errs.Affinity, FlagVMAffinity)
	}
	const withExpr = `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[` +
		`{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"Exists"}],` +
		`"matchFields":[{"key":"metadata.name","operator":"In","values":["harvester-node-1"]}]}]}}}`
	in, errs := ParseInputsByFlag(Config{VMAffinity: withExpr})
	if errs.Affinity != nil || in.Affinity == nil {
		t.Errorf("affinity with a match expression: %v, %+v", errs.Affinity, in.Affinity)
	}
}
