package config

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
