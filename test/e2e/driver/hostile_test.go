package driver_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

// TestKeyPairWithAnotherPrivateKey: a private key that does not belong to
// the key pair fails the create before anything exists, naming both keys'
// fingerprints.
func TestKeyPairWithAnotherPrivateKey(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-kpm")
	name := "e2e-kpm-pool1-k0000"
	key, _ := drivertest.WriteKey(t, t.TempDir(), "other", false)
	out, err := r.create(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-key-pair-name=default/sim-key", "--harvester-ssh-private-key-path="+key)
	if err == nil {
		r.mustRun("rm", "-y", "--update-config", name)
		t.Fatalf("create with another private key succeeded:\n%s", out)
	}
	if !strings.Contains(out, "does not belong to key pair default/sim-key") || !strings.Contains(out, "SHA256:") {
		t.Errorf("output lacks the key pair mismatch:\n%s", out)
	}
	r.assertNothingLeft()
}

// TestSpecialKeyPathFailsFast (issue 24 case 3): an SSH key path that is a
// FIFO (which never ends unless someone writes to it) or /dev/zero fails
// the create at once, saying what the path is; nothing is created and no
// plugin process is left waiting.
func TestSpecialKeyPathFailsFast(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "key-fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRM(t, "e2e-fifo")
	for _, c := range []struct{ path, want string }{
		{fifo, fifo + " (the private key) is a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "/dev/zero (the private key) is a character device, not a regular file"},
	} {
		name := "e2e-fifo-pool1-f0000"
		start := time.Now()
		out, err := r.create(name, append(imageAndNet, "--harvester-ssh-private-key-path="+c.path)...)
		mustFail(t, out, err, "--harvester-ssh-private-key-path: "+c.want)
		if took := time.Since(start); took > time.Minute {
			t.Errorf("%s: create took %s to fail", c.path, took)
		}
		if ls := r.stdout("ls", "-q"); strings.Contains(ls, name) {
			r.mustRun("rm", "-y", "-f", name)
		}
	}
}
