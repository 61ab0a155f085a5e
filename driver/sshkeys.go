package driver

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rancher/machine/libmachine/log"
	"github.com/rancher/machine/libmachine/ssh"
)

// prepareSSHKeys puts the machine's private key in the store (0600) and
// returns the public keys to authorize: the key pair's public key, the .pub
// beside --harvester-ssh-private-key-path, or a newly generated key.
func (d *Driver) prepareSSHKeys(ctx context.Context, api *harvesterAPI, keyPair *ObjectRef) ([]string, error) {
	keyPath := d.GetSSHKeyPath()
	switch {
	case keyPair != nil:
		kp, err := api.getKeyPair(ctx, *keyPair)
		if err != nil {
			return nil, notFoundOr(err, fmt.Sprintf("--%s: key pair %s does not exist; nothing was created", FlagKeyPairName, keyPair))
		}
		if ok, msg := conditionTrue(kp.Status.Conditions, "validated"); !ok {
			return nil, fmt.Errorf("--%s: key pair %s is not validated%s; nothing was created", FlagKeyPairName, keyPair, suffix(msg))
		}
		if err := copyPrivateKey(d.SSHPrivateKeyPath, keyPath); err != nil {
			return nil, err
		}
		return []string{strings.TrimSpace(kp.Spec.PublicKey)}, nil
	case d.SSHPrivateKeyPath != "":
		if err := copyPrivateKey(d.SSHPrivateKeyPath, keyPath); err != nil {
			return nil, err
		}
		pub, err := os.ReadFile(d.SSHPrivateKeyPath + ".pub")
		if err != nil {
			return nil, fmt.Errorf("--%s: the public key %s.pub is needed when no --%s is given: %w", FlagSSHPrivateKeyPath, d.SSHPrivateKeyPath, FlagKeyPairName, err)
		}
		return []string{strings.TrimSpace(string(pub))}, nil
	default:
		log.Debugf("generating an SSH key in %s", keyPath)
		if err := ssh.GenerateSSHKey(keyPath); err != nil {
			return nil, fmt.Errorf("generate SSH key: %w", err)
		}
		pub, err := os.ReadFile(keyPath + ".pub")
		if err != nil {
			return nil, fmt.Errorf("read generated SSH key: %w", err)
		}
		return []string{strings.TrimSpace(string(pub))}, nil
	}
}

func copyPrivateKey(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("--%s: %w", FlagSSHPrivateKeyPath, err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return fmt.Errorf("store SSH private key: %w", err)
	}
	return os.Chmod(dst, 0o600)
}
