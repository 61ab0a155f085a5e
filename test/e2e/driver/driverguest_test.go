package driver_test

import (
	"context"
	"log/slog"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// issueGuestAsDriver makes cluster's guest credential in ns with the driver
// credential kc exactly as --harvester-cloud-provider does
// (driver/cloudprovider.go): labelled with the driver's identity, read from
// its token, as its admission policy wants.
func issueGuestAsDriver(t *testing.T, ctx context.Context, kc, cluster, ns string) (*credentials.Harvester, credentials.Access) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	client, err := restapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &credentials.Harvester{Client: client, Config: cfg, Log: slog.New(slog.DiscardHandler)}
	a := credentials.Access{ClusterName: cluster, Namespace: ns}.WithDefaults()
	if id, ok := credentials.DriverIdentityOfToken(cfg.BearerToken); ok {
		a.IssuedBy = id.LabelValue()
	}
	if err := h.EnsureAccess(ctx, a); err != nil {
		t.Fatalf("the driver credential makes the guest credential: %v", err)
	}
	return h, a
}
