package cli

import (
	"strings"
	"testing"
)

func TestDoctorAndGCValidateAllFlagsAtOnce(t *testing.T) {
	for _, cmd := range []string{"doctor", "gc"} {
		_, stderr, code := run(t, cmd, "--cluster-name", "A_B", "-o", "yaml", "--kubeconfig", "/nonexistent")
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", cmd, code)
		}
		for _, want := range []string{`--cluster-name "A_B": must be a DNS-1123 label`, "--namespace: required", `--output "yaml": must be table or json`} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, want, stderr)
			}
		}
	}
}
