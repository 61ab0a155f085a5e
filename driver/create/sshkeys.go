package create

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rancher/machine/libmachine/ssh"
	cryptossh "golang.org/x/crypto/ssh"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// prepareSSHKeys puts the machine's private key in the store (0600) and
// returns the public keys to authorize: the key pair's public key, the .pub
// beside --harvester-ssh-private-key-path, or a newly generated key. A
// private key that does not belong to the key pair is refused before
// anything is stored or created.
func prepareSSHKeys(ctx context.Context, api *harvesterapi.API, m *machine.Machine, keyPath string, keyPair *config.ObjectRef) ([]string, error) {
	private := m.Config.SSHPrivateKeyPath
	switch {
	case keyPair != nil:
		kp, err := readKeyPair(ctx, api, *keyPair)
		if err != nil {
			return nil, nothingCreated(err)
		}
		if err := checkKeyPairMatches(private, keyPair.String(), kp.Spec.PublicKey); err != nil {
			return nil, err
		}
		if err := copyPrivateKey(private, keyPath); err != nil {
			return nil, err
		}
		return []string{strings.TrimSpace(kp.Spec.PublicKey)}, nil
	case private != "":
		if err := copyPrivateKey(private, keyPath); err != nil {
			return nil, err
		}
		pub, err := config.ReadPublicKeyFile(private + ".pub")
		if err != nil {
			return nil, err
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

// readKeyPair reads the key pair, which must be validated.
func readKeyPair(ctx context.Context, api *harvesterapi.API, keyPair config.ObjectRef) (*harvesterapi.KeyPair, error) {
	kp, err := api.GetKeyPair(ctx, keyPair.Namespace, keyPair.Name)
	if err != nil {
		return nil, harvesterapi.NotFoundOr(err, config.FlagProblem(config.FlagKeyPairName, "key pair %s does not exist", keyPair))
	}
	if ok, msg := harvesterapi.ConditionTrue(kp.Status.Conditions, "validated"); !ok {
		return nil, config.FlagProblem(config.FlagKeyPairName, "key pair %s is not validated%s", keyPair, harvesterapi.MessageSuffix(msg))
	}
	return kp, nil
}

func copyPrivateKey(src, dst string) error {
	b, err := config.ReadPrivateKeyFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return fmt.Errorf("store SSH private key: %w", err)
	}
	return os.Chmod(dst, 0o600)
}

// checkKeyPairMatches checks that the private key at path belongs to the
// key pair whose spec.publicKey is publicKey.
func checkKeyPairMatches(path, keyPair, publicKey string) error {
	want, _, _, _, err := cryptossh.ParseAuthorizedKey([]byte(publicKey))
	if err != nil {
		return config.FlagProblem(config.FlagKeyPairName, "key pair %s has no valid public key (spec.publicKey): %v", keyPair, err).Because(err)
	}
	got, err := config.PrivateKeyPublic(path)
	if err != nil {
		return err
	}
	if got == nil {
		log.Warnf("--%s: the private key is encrypted and carries no public key; cannot check it against key pair %s", config.FlagSSHPrivateKeyPath, keyPair)
		return nil
	}
	if !bytes.Equal(got.Marshal(), want.Marshal()) {
		return config.FlagProblem(config.FlagSSHPrivateKeyPath, "the private key (%s) does not belong to key pair %s (--%s, public key %s); nothing was created",
			cryptossh.FingerprintSHA256(got), keyPair, config.FlagKeyPairName, cryptossh.FingerprintSHA256(want))
	}
	return nil
}
