package fault

import (
	"path"
	"regexp"
	"testing"
)

// TestGlobRegex: the policy's regular expressions match what path.Match
// matches, for the launcher Pod names KubeVirt gives (generateName
// virt-launcher-<vmi>-, five random characters).
func TestGlobRegex(t *testing.T) {
	for _, tc := range []struct{ glob, name string }{
		{"e2e-stuck-*", "e2e-stuck-pool1-s0000"},
		{"e2e-stuck-*", "e2e-other-pool1"},
		{"vm?", "vm1"},
		{"vm?", "vm12"},
		{"vm[0-9]", "vm7"},
		{"vm[^0-9]", "vm7"},
		{"a.b", "axb"},
		{"*", "anything"},
	} {
		want, _ := path.Match(tc.glob, tc.name)
		re := regexp.MustCompile("^virt-launcher-" + globRegex(tc.glob) + "-[a-z0-9]{5}$")
		if got := re.MatchString("virt-launcher-" + tc.name + "-x7k2p"); got != want {
			t.Errorf("glob %q, pod of %q: regex %s matches %v, path.Match %v", tc.glob, tc.name, re, got, want)
		}
	}
	if p, b := BuildStuckSchedulingPolicy(nil); p != nil || b != nil {
		t.Error("a policy without patterns")
	}
	p, _ := BuildStuckSchedulingPolicy([]string{"default/e2e-*"})
	if n := len(p.Spec.Validations); n != 2 {
		t.Fatalf("%d validations, want the probe's and the pattern's", n)
	}
	if got, want := p.Spec.Validations[1].Expression, `!(request.namespace.matches('^default$') && object.metadata.name.matches('^virt-launcher-e2e-[^/]*-[a-z0-9]{5}$'))`; got != want {
		t.Errorf("expression %s\nwant       %s", got, want)
	}
}
