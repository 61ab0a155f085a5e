package cli

import (
	"os"
	"path/filepath"
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

// TestGCGuestKubeconfigReadBeforeAnyCall: a --guest-kubeconfig that cannot
// be read is reported naming the flag, before Harvester is asked anything
// (its server here refuses connections).
func TestGCGuestKubeconfigReadBeforeAnyCall(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "harvester.yaml")
	data := "apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster: {server: \"https://127.0.0.1:1\"}\n" +
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: h, user: u}\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, "gc", "--cluster-name", "a", "--namespace", "default", "--kubeconfig", kc,
		"--guest-kubeconfig", filepath.Join(dir, "missing.yaml"), "--timeout", "5s")
	if code != 1 || !strings.Contains(stderr, "--guest-kubeconfig") || strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr:\n%s\nwant the --guest-kubeconfig error and no call to Harvester", code, stderr)
	}
}
