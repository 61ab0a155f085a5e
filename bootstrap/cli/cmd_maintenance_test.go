package cli

import (
	"strings"
	"testing"
)

// TestMaintenanceCheckValidatesAllAtOnce: every problem of the arguments
// in one error, before Harvester is asked anything.
func TestMaintenanceCheckValidatesAllAtOnce(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"-o", "yaml", "--namespace", "Bad_NS", "--guest-kubeconfig", "g.yaml"}, []string{
			"give the HOSTs to put into maintenance, or --upgrade", `--output "yaml": must be table or json`,
			`--namespace "Bad_NS": must be a DNS-1123 label`, "--guest-kubeconfig needs --cluster-name"}},
		{[]string{"--upgrade", "--force", "harvester-node-1"}, []string{"--upgrade takes every host: give no HOST (got [harvester-node-1])",
			"--force is maintenance mode's option; an upgrade has none"}},
		{[]string{"--restore-vm", "harvester-node-1"}, []string{"--restore-vm is the upgrade's option: give it with --upgrade"}},
	}
	for _, c := range cases {
		_, stderr, code := run(t, append([]string{"maintenance-check", "--kubeconfig", "/nonexistent"}, c.args...)...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", c.args, code)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
		if strings.Contains(stderr, "/nonexistent") {
			t.Errorf("%v: the kubeconfig was read before the arguments were checked:\n%s", c.args, stderr)
		}
	}
}

func TestMaintenanceCheckHelpNamesTheRules(t *testing.T) {
	out, _, code := run(t, "maintenance-check", "--help")
	for _, want := range []string{"HOST... | --upgrade", "LiveMigrateIfPossible", "--force", "--guest-kubeconfig", "--restore-vm", "kubevirt-evacuation-*", "Exit 1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}
