package driver_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestKeyPairWithAnotherPrivateKey: a private key that does not belong to
// the key pair fails the create before anything exists, naming both keys'
// fingerprints.
func TestKeyPairWithAnotherPrivateKey(t *testing.T) {
	r := newRM(t, "e2e-kpm")
	name := "e2e-kpm-pool1-k0000"
	_, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
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
