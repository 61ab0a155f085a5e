// Package drivertest holds what the driver's packages' tests share: a
// kubeconfig and the check of a list of problems. Only tests import it.
package drivertest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cryptossh "golang.org/x/crypto/ssh"
)

// Kubeconfig is a valid kubeconfig of a server at https://127.0.0.1:6443
// with a token.
const Kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: h
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
contexts:
- name: h
  context:
    cluster: h
    user: u
    namespace: default
current-context: h
users:
- name: u
  user:
    token: secret-token
`

// CheckProblems checks that errs are len(want) problems, the i-th
// containing want[i].
func CheckProblems(t *testing.T, name string, errs []error, want []string) bool {
	t.Helper()
	if len(errs) != len(want) {
		t.Errorf("%s: %v, want %d problems", name, errors.Join(errs...), len(want))
		return false
	}
	ok := true
	for i, e := range errs {
		if !strings.Contains(e.Error(), want[i]) {
			t.Errorf("%s: %q lacks %q", name, e, want[i])
			ok = false
		}
	}
	return ok
}

// WriteKey writes an OpenSSH private key to dir/name and, when pub, its
// .pub; it returns the path and the authorized_keys line.
func WriteKey(t *testing.T, dir, name string, pub bool) (string, string) {
	t.Helper()
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := cryptossh.MarshalPrivateKey(sk, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := cryptossh.NewPublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	line := string(cryptossh.MarshalAuthorizedKey(sshPub))
	if pub {
		if err := os.WriteFile(path+".pub", []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path, line
}
