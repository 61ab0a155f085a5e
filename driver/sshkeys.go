package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/rancher/machine/libmachine/ssh"
	cryptossh "golang.org/x/crypto/ssh"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// prepareSSHKeys puts the machine's private key in the store (0600) and
// returns the public keys to authorize: the key pair's public key, the .pub
// beside --harvester-ssh-private-key-path, or a newly generated key. A
// private key that does not belong to the key pair is refused before
// anything is stored or created.
func (d *Driver) prepareSSHKeys(ctx context.Context, api *harvesterapi.API, keyPair *config.ObjectRef) ([]string, error) {
	keyPath := d.GetSSHKeyPath()
	switch {
	case keyPair != nil:
		kp, err := api.GetKeyPair(ctx, keyPair.Namespace, keyPair.Name)
		if err != nil {
			return nil, notFoundOr(err, config.FlagProblem(config.FlagKeyPairName, "key pair %s does not exist; nothing was created", keyPair))
		}
		if ok, msg := harvesterapi.ConditionTrue(kp.Status.Conditions, "validated"); !ok {
			return nil, config.FlagProblem(config.FlagKeyPairName, "key pair %s is not validated%s; nothing was created", keyPair, suffix(msg))
		}
		if err := checkKeyPairMatches(d.SSHPrivateKeyPath, keyPair.String(), kp.Spec.PublicKey); err != nil {
			return nil, err
		}
		if err := copyPrivateKey(d.SSHPrivateKeyPath, keyPath); err != nil {
			return nil, err
		}
		return []string{strings.TrimSpace(kp.Spec.PublicKey)}, nil
	case d.SSHPrivateKeyPath != "":
		if err := copyPrivateKey(d.SSHPrivateKeyPath, keyPath); err != nil {
			return nil, err
		}
		pub, err := readPublicKeyFile(d.SSHPrivateKeyPath + ".pub")
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

func copyPrivateKey(src, dst string) error {
	b, err := readPrivateKeyFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return fmt.Errorf("store SSH private key: %w", err)
	}
	return os.Chmod(dst, 0o600)
}

// checkSSHKeyFiles checks, when the flags are read (before any API call),
// that --harvester-ssh-private-key-path is a readable private key and,
// without a key pair, that <path>.pub exists, is a public key and belongs
// to the private key. The key's content never appears in an error.
func checkSSHKeyFiles(c config.Config) []error {
	if c.SSHPrivateKeyPath == "" {
		return nil
	}
	priv, err := privateKeyPublic(c.SSHPrivateKeyPath)
	if err != nil {
		return []error{err}
	}
	if c.KeyPairName != "" {
		return nil
	}
	pubPath := c.SSHPrivateKeyPath + ".pub"
	b, err := readPublicKeyFile(pubPath)
	if err != nil {
		return []error{err}
	}
	pub, _, _, _, err := cryptossh.ParseAuthorizedKey(b)
	if err != nil {
		return []error{config.FlagProblem(config.FlagSSHPrivateKeyPath, "%s is not an SSH public key (authorized_keys line): %v", pubPath, err).Because(err)}
	}
	if priv != nil && !bytes.Equal(priv.Marshal(), pub.Marshal()) {
		return []error{config.FlagProblem(config.FlagSSHPrivateKeyPath, "%s (%s) is not the public key of the private key (%s)",
			pubPath, cryptossh.FingerprintSHA256(pub), cryptossh.FingerprintSHA256(priv))}
	}
	return nil
}

// privateKeyPublic reads a private key file and returns its public key; nil
// (and no error) for an encrypted key whose public key the file does not
// carry.
func privateKeyPublic(path string) (cryptossh.PublicKey, error) {
	b, err := readPrivateKeyFile(path)
	if err != nil {
		return nil, err
	}
	signer, err := cryptossh.ParsePrivateKey(b)
	var missing *cryptossh.PassphraseMissingError
	switch {
	case err == nil:
		return signer.PublicKey(), nil
	case errors.As(err, &missing):
		return missing.PublicKey, nil
	default:
		return nil, config.FlagProblem(config.FlagSSHPrivateKeyPath, "%s is not an SSH private key (PEM or OpenSSH format): %v", path, err).Because(err)
	}
}

// checkKeyPairMatches checks that the private key at path belongs to the
// key pair whose spec.publicKey is publicKey.
func checkKeyPairMatches(path, keyPair, publicKey string) error {
	want, _, _, _, err := cryptossh.ParseAuthorizedKey([]byte(publicKey))
	if err != nil {
		return config.FlagProblem(config.FlagKeyPairName, "key pair %s has no valid public key (spec.publicKey): %v", keyPair, err).Because(err)
	}
	got, err := privateKeyPublic(path)
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

// readPrivateKeyFile reads --harvester-ssh-private-key-path (see
// readUserFile).
func readPrivateKeyFile(path string) ([]byte, error) {
	b, err := config.ReadUserFile("the private key", path, config.MaxKeyFileBytes)
	if err != nil {
		return nil, config.FlagError(config.FlagSSHPrivateKeyPath, err)
	}
	return b, nil
}

// readPublicKeyFile reads <--harvester-ssh-private-key-path>.pub, needed
// when no key pair is given (see readUserFile).
func readPublicKeyFile(path string) ([]byte, error) {
	b, err := config.ReadUserFile("the public key", path, config.MaxKeyFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, config.FlagProblem(config.FlagSSHPrivateKeyPath, "the public key %s is needed when no --%s is given (it is authorized on the VM): %v",
			path, config.FlagKeyPairName, err).Because(err)
	case err != nil:
		return nil, config.FlagError(config.FlagSSHPrivateKeyPath, err)
	}
	return b, nil
}
