package harvesterapi

import (
	"errors"
	"net"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestConnectionFailureIgnoresAnswers(t *testing.T) {
	if _, ok := connectionFailure(apierrors.NewInternalError(errors.New("boom")), "1s"); ok {
		t.Error("an API answer counted as a connection failure")
	}
	if _, ok := connectionFailure(nil, "1s"); ok {
		t.Error("nil counted")
	}
	if why, ok := connectionFailure(&net.DNSError{Err: "no such host", Name: "harvester.invalid", IsNotFound: true}, "1s"); !ok || !strings.Contains(why, "DNS") {
		t.Errorf("DNS: %q %v", why, ok)
	}
}
