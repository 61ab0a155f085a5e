package config

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

func TestAPIErrorUnauthorized(t *testing.T) {
	err := kubeapi.Explain("get VM", errUnauthorized(), CredentialsRejected)
	if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "5827") || !strings.Contains(err.Error(), "expired") {
		t.Errorf("unclear 401 error: %v", err)
	}
}

func errUnauthorized() error {
	return apierrors.NewUnauthorized("token expired")
}

func TestCommandCredential(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "HARVESTER_KUBECONFIG_CONTENT" {
				return v
			}
			return ""
		}
	}
	cases := []struct {
		name string
		args []string
		env  string
		want string
		ok   bool
	}{
		{"none", []string{"rancher-machine", "rm", "-y", "m"}, "", "", false},
		{"env", []string{"rm"}, "ENV", "ENV", true},
		{"arg with = and padding wins", []string{"rm", "--harvester-kubeconfig-content=" + b64(drivertest.Kubeconfig+"# padded\n")}, "ENV", drivertest.Kubeconfig + "# padded\n", true},
		{"arg separate", []string{"rm", "--harvester-kubeconfig-content", "PLAIN", "m"}, "", "PLAIN", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := CommandCredential(tc.args, env(tc.env))
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %q %v, want %q %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
