package harvesterapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// ErrUnreachable matches (errors.Is) the error of a command that stopped
// because Harvester's API server could not be reached at all.
var ErrUnreachable = errors.New("cannot reach the Harvester API server")

// unreachableError is the one error a pre-create check gives when the
// first call fails at the connection level: every later call would fail
// the same way, after the same timeout.
type unreachableError struct {
	server string // the kubeconfig's server
	why    string // timeout, connection refused, TLS, DNS, network
	err    error  // the failed call's error, named after its operation
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%s at %s (%s); stopped at the first failed call: %v", ErrUnreachable, e.server, e.why, e.err)
}

func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }

func (e *unreachableError) Unwrap() error { return e.err }

// connectionFailure says whether err failed below HTTP (no answer, no
// connection, no TLS session, no address), and how (callTimeout is the
// deadline of a call, as the message names it). An answer of the API
// server (any status, a 504 included) is not one.
func connectionFailure(err error, callTimeout string) (string, bool) {
	var status apierrors.APIStatus
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var netErr net.Error
	switch {
	case err == nil || errors.As(err, &status):
		return "", false
	case errors.As(err, &dns):
		return "DNS: " + dns.Error(), true
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return "TLS: the server's certificate is not accepted", true
	case errors.As(err, &header):
		return "TLS: the server does not speak TLS", true
	case errors.Is(err, kubeapi.ErrTLSHandshakeStalled):
		return "TLS: the server accepted connections but completed no TLS handshake within " + callTimeout, true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ECONNRESET):
		return "network: " + errors.Unwrap(err).Error(), true
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "no answer within " + callTimeout, true
	}
	return "", false
}

// noteUnreachable records, while the API is in fail-fast mode, the first
// connection-level failure; later calls then return it at once.
func (a *API) noteUnreachable(err error) {
	if !a.failFast || a.unreachable != nil {
		return
	}
	timeout := a.opts.CallTimeout.String()
	if a.opts.TimeoutSource != "" {
		timeout += " (" + a.opts.TimeoutSource + ")"
	}
	if why, ok := connectionFailure(err, timeout); ok {
		a.unreachable = &unreachableError{server: a.server(), why: why, err: err}
	}
}

// FailFast starts the fail-fast mode (the pre-create check): once a call
// fails at the connection level, every later call returns that failure at
// once. The function it returns ends the mode and returns that failure
// (an error matching ErrUnreachable), or nil when there was none.
func (a *API) FailFast() (end func() error) {
	a.failFast = true
	return func() error {
		u := a.unreachable
		a.failFast, a.unreachable = false, nil
		if u == nil {
			return nil
		}
		return u
	}
}

// IsTerminal: after this error no further call is worth making (the
// credential is rejected, or the server cannot be reached).
func IsTerminal(err error) bool {
	return errors.Is(err, kubeapi.ErrCredentialsRejected) || errors.Is(err, ErrUnreachable)
}
