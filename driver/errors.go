package driver

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrCredentialsRejected is returned (wrapped) whenever Harvester answers
// 401 Unauthorized.
var ErrCredentialsRejected = errors.New("Harvester rejected the credentials (401 Unauthorized): " +
	"the token in the cloud credential's kubeconfig has most likely expired " +
	"(known Rancher issue 5827: since Rancher v2.8 kubeconfig tokens expire after 30 days by default). " +
	"Create a new kubeconfig for the Harvester cluster (for example Harvester UI > Support > Download KubeConfig, " +
	"or a kubeconfig from a new, non-expiring Rancher API token), put it in the cloud credential " +
	"(--" + FlagKubeconfigContent + " / HARVESTER_KUBECONFIG_CONTENT), and retry; " +
	"`rancher-machine rm --update-config` uses the new credential")

// apiError wraps an API error with the operation's name; a 401 becomes
// ErrCredentialsRejected.
func apiError(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrCredentialsRejected) {
		return err
	}
	if apierrors.IsUnauthorized(err) {
		return fmt.Errorf("%s: %w", op, ErrCredentialsRejected)
	}
	return fmt.Errorf("%s: %w", op, err)
}
