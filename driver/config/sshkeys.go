package config

import (
	"bytes"
	"errors"
	"io/fs"

	cryptossh "golang.org/x/crypto/ssh"
)

// checkSSHKeyFiles checks, when the flags are read (before any API call),
// that --harvester-ssh-private-key-path is a readable private key and,
// without a key pair, that <path>.pub exists, is a public key and belongs
// to the private key. The key's content never appears in an error.
func checkSSHKeyFiles(c Config) []error {
	if c.SSHPrivateKeyPath == "" {
		return nil
	}
	priv, err := PrivateKeyPublic(c.SSHPrivateKeyPath)
	if err != nil {
		return []error{err}
	}
	if c.KeyPairName != "" {
		return nil
	}
	pubPath := c.SSHPrivateKeyPath + ".pub"
	b, err := ReadPublicKeyFile(pubPath)
	if err != nil {
		return []error{err}
	}
	pub, _, _, _, err := cryptossh.ParseAuthorizedKey(b)
	if err != nil {
		return []error{FlagProblem(FlagSSHPrivateKeyPath, "%s is not an SSH public key (authorized_keys line): %v", pubPath, err).Because(err)}
	}
	if priv != nil && !bytes.Equal(priv.Marshal(), pub.Marshal()) {
		return []error{FlagProblem(FlagSSHPrivateKeyPath, "%s (%s) is not the public key of the private key (%s)",
			pubPath, cryptossh.FingerprintSHA256(pub), cryptossh.FingerprintSHA256(priv))}
	}
	return nil
}

// PrivateKeyPublic reads a private key file and returns its public key; nil
// (and no error) for an encrypted key whose public key the file does not
// carry.
func PrivateKeyPublic(path string) (cryptossh.PublicKey, error) {
	b, err := ReadPrivateKeyFile(path)
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
		return nil, FlagProblem(FlagSSHPrivateKeyPath, "%s is not an SSH private key (PEM or OpenSSH format): %v", path, err).Because(err)
	}
}

// ReadPrivateKeyFile reads --harvester-ssh-private-key-path (see
// readUserFile).
func ReadPrivateKeyFile(path string) ([]byte, error) {
	b, err := ReadUserFile("the private key", path, MaxKeyFileBytes)
	if err != nil {
		return nil, FlagError(FlagSSHPrivateKeyPath, err)
	}
	return b, nil
}

// ReadPublicKeyFile reads <--harvester-ssh-private-key-path>.pub, needed
// when no key pair is given (see readUserFile).
func ReadPublicKeyFile(path string) ([]byte, error) {
	b, err := ReadUserFile("the public key", path, MaxKeyFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, FlagProblem(FlagSSHPrivateKeyPath, "the public key %s is needed when no --%s is given (it is authorized on the VM): %v",
			path, FlagKeyPairName, err).Because(err)
	case err != nil:
		return nil, FlagError(FlagSSHPrivateKeyPath, err)
	}
	return b, nil
}
