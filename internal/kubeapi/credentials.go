package kubeapi

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrCredentialsRejected matches (errors.Is) every CredentialsRejectedError.
var ErrCredentialsRejected = errors.New("credentials rejected by Harvester (401 Unauthorized)")

// CredentialsRejectedError says that the API server answered 401: the
// token has most likely expired (Rancher issue 5827), and how to renew it.
type CredentialsRejectedError struct {
	// Source is where the user put the kubeconfig, e.g.
	// "the cloud credential (--harvester-kubeconfig-content / HARVESTER_KUBECONFIG_CONTENT)".
	Source string
	// After is advice that follows "retry", e.g. which command picks up the
	// new credential; may be empty.
	After string
}

func (e *CredentialsRejectedError) Error() string {
	msg := ErrCredentialsRejected.Error() + ": " +
		"the token in the kubeconfig has most likely expired " +
		"(known Rancher issue 5827: since Rancher v2.8 kubeconfig tokens expire after 30 days by default). " +
		"Create a new kubeconfig for the Harvester cluster (for example Harvester UI > Support > Download KubeConfig, " +
		"or a kubeconfig from a new, non-expiring Rancher API token), put it in " + e.Source + ", and retry"
	if e.After != "" {
		msg += "; " + e.After
	}
	return msg
}

// Is makes errors.Is(err, ErrCredentialsRejected) true.
func (e *CredentialsRejectedError) Is(target error) bool { return target == ErrCredentialsRejected }

// IsUnauthorized reports whether err is, or wraps, an API answer with
// status 401.
func IsUnauthorized(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsUnauthorized(err) {
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == http.StatusUnauthorized
}

// Explain wraps err with the operation's name; a 401 becomes
// CredentialsRejectedError (once, however often it is explained).
func Explain(op string, err error, rejected *CredentialsRejectedError) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrCredentialsRejected) {
		return err
	}
	if IsUnauthorized(err) {
		return fmt.Errorf("%s: %w", op, rejected)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Wrap appends the explanation to err when err is a 401 not yet explained;
// other errors are returned as they are.
func (e *CredentialsRejectedError) Wrap(err error) error {
	if !IsUnauthorized(err) || errors.Is(err, ErrCredentialsRejected) {
		return err
	}
	return fmt.Errorf("%w\n%w", err, e)
}
