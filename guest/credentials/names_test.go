package credentials

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// A service account whose derived names are invalid (a 250-character name
// makes the token Secret <sa>-token 256 characters) is rejected before any
// API call, naming the field and the limit; nothing is created.
func TestDerivedNamesValidatedBeforeAnyCall(t *testing.T) {
	long := strings.Repeat("s", 250)
	a := Access{ClusterName: "guest", Namespace: "default", ServiceAccount: long}
	cs := fake.NewSimpleClientset()
	h := &Harvester{Client: restapifake.Clients{Kube: cs}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := h.EnsureAccess(context.Background(), a)
	if err == nil {
		t.Fatal("EnsureAccess accepted a 250-character service account")
	}
	for _, want := range []string{"service account", "at most 247 characters", "token Secret", long + "-token"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if n := len(cs.Actions()); n != 0 {
		t.Errorf("%d API requests made before rejecting the names: %v", n, cs.Actions())
	}
	// The longest valid name passes and its derived names are all valid.
	ok := Access{ClusterName: "guest", Namespace: "default", ServiceAccount: strings.Repeat("s", MaxServiceAccountName)}
	if err := ok.Validate(); err != nil {
		t.Errorf("%d-character service account rejected: %v", MaxServiceAccountName, err)
	}
	over := Access{ClusterName: "guest", Namespace: "default", ServiceAccount: strings.Repeat("s", MaxServiceAccountName+1)}
	if err := over.Validate(); err == nil {
		t.Errorf("%d-character service account accepted", MaxServiceAccountName+1)
	}
}
