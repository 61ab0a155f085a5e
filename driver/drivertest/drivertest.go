// Package drivertest holds what the driver's packages' tests share: a
// kubeconfig and the check of a list of problems. Only tests import it.
package drivertest

import (
	"errors"
	"strings"
	"testing"
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
