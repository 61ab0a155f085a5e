package fault

import (
	"strings"
	"testing"
)

func TestEditPatterns(t *testing.T) {
	tests := []struct {
		list, pattern string
		remove        bool
		want          string
	}{
		{"", "default/a", false, "default/a"},
		{"default/b\ndefault/a", "default/a", false, "default/a\ndefault/b"},
		{"default/b\ndefault/a\n", "default/a", true, "default/b"},
		{"default/a", "default/a", true, ""},
		{"default/a 5s\ndefault/b 1s", "default/a 10s", false, "default/a 10s\ndefault/b 1s"},
		{"default/a 5s\ndefault/b 1s", "default/a 0s", true, "default/b 1s"},
	}
	for _, tt := range tests {
		if got := editPatterns(tt.list, tt.pattern, tt.remove); got != tt.want {
			t.Errorf("editPatterns(%q, %q, %v) = %q, want %q", tt.list, tt.pattern, tt.remove, got, tt.want)
		}
	}
}

func TestParseResource(t *testing.T) {
	tests := []struct{ in, group, resource, err string }{
		{"virtualmachines.kubevirt.io", "kubevirt.io", "virtualmachines", ""},
		{"Secrets", "", "secrets", ""},
		{"", "", "", "not a resource"},
		{"virtualmachines/status", "", "", "not a resource"},
	}
	for _, tt := range tests {
		g, r, err := parseResource(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseResource(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || g != tt.group || r != tt.resource {
			t.Errorf("parseResource(%q) = %q %q %v", tt.in, g, r, err)
		}
	}
}

func TestRejectPolicyMatchesOnlyCreatesOfTheResource(t *testing.T) {
	policy, binding := buildRejectCreatePolicy("kubevirt.io", "virtualmachines")
	rule := policy.Spec.MatchConstraints.ResourceRules[0]
	if len(rule.Operations) != 1 || rule.Operations[0] != "CREATE" || rule.Resources[0] != "virtualmachines" || rule.APIGroups[0] != "kubevirt.io" {
		t.Errorf("rule = %+v", rule)
	}
	if binding.Spec.PolicyName != policy.Name || binding.Spec.ValidationActions[0] != "Deny" {
		t.Errorf("binding = %+v", binding.Spec)
	}
}
