package driver_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/test/harness"
)

// TestDefaultSSHUser: a machine made without --harvester-ssh-user has
// libmachine's default SSH user, root. The driver's cloud-init then sets
// disable_root: false and top-level ssh_authorized_keys, which cloud-init
// gives root as well as the default user, as plain keys
// (cloudinit/config/cc_ssh.py apply_credentials). So rancher-machine ssh
// runs commands as root, and stop, start and restart, which wait for SSH,
// complete.
func TestDefaultSSHUser(t *testing.T) {
	t.Parallel()
	harness.NeedGuests(t)
	r := newRM(t, "e2e-root")
	name := "e2e-root-pool1-r0000"
	withDocker(t, name) // start and restart wait for the engine too
	args := slices.DeleteFunc(r.createArgs(name, imageAndNet...), func(a string) bool {
		return strings.HasPrefix(a, "--harvester-ssh-user=")
	})
	if out, err := r.run(args...); err != nil {
		t.Fatalf("create with the default SSH user: %v\n%s", err, out)
	}
	defer r.mustRun("rm", "-y", "--update-config", name)
	if ud := string(getSecret(t, name+"-cloudinit").Data["userdata"]); !strings.Contains(ud, "disable_root: false") {
		t.Fatalf("user data of a root machine lacks disable_root: false:\n%s", ud)
	}
	whoami := func(when string) {
		t.Helper()
		if out := r.mustRun("ssh", name, "--", "whoami"); strings.TrimSpace(out) != "root" {
			t.Errorf("%s: ssh whoami printed %q, want root", when, out)
		}
	}
	whoami("after create")
	r.mustRun("stop", name)
	r.mustRun("start", name)
	whoami("after start")
	r.mustRun("restart", name)
	whoami("after restart")
	if s := status(t, r, name); s != "Running" {
		t.Errorf("after restart: status %q, want Running", s)
	}
}
