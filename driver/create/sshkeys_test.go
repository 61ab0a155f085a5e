package create

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

func TestKeyPairMatchesPrivateKey(t *testing.T) {
	dir := t.TempDir()
	key, pub := drivertest.WriteKey(t, dir, "k", false)
	_, otherPub := drivertest.WriteKey(t, dir, "o", false)
	if err := checkKeyPairMatches(key, "default/k", pub); err != nil {
		t.Errorf("matching key pair rejected: %v", err)
	}
	err := checkKeyPairMatches(key, "default/k", otherPub)
	if err == nil || !strings.Contains(err.Error(), "--harvester-ssh-private-key-path: the private key (SHA256:") ||
		!strings.Contains(err.Error(), "does not belong to key pair default/k") {
		t.Errorf("mismatch: got %v", err)
	}
	if err := checkKeyPairMatches(key, "default/k", "not a key"); err == nil || !strings.Contains(err.Error(), "--harvester-key-pair-name: key pair default/k has no valid public key") {
		t.Errorf("bad spec.publicKey: got %v", err)
	}
}
