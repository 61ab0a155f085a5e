// Package harvesterapi is the node driver's thin typed layer over
// Harvester's API: one method per API call (with the per-call deadline, and
// the error named after the operation), the watches that wait for objects
// to go, what one process has read already, and the fail-fast mode of the
// pre-create check. It knows nothing of flags or machines: the driver
// passes what its messages need in Options.
package harvesterapi

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// The Harvester kinds read through the dynamic client, and the Setting
// that names Harvester's version (its UID identifies the cluster).
var (
	GVRSetting  = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
	GVRImage    = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "virtualmachineimages"}
	GVRKeyPair  = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "keypairs"}
	GVRNetwork  = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
	ServerVerID = "server-version"
)

// Options are what the layer's calls and messages need from the driver.
type Options struct {
	// CallTimeout is the deadline of each single API call.
	CallTimeout time.Duration
	// TimeoutSource names where CallTimeout is set, for the message of a
	// server that does not answer ("--harvester-api-timeout").
	TimeoutSource string
	// Rejected is the error a 401 becomes (where the credential comes
	// from, how to renew it).
	Rejected *kubeapi.CredentialsRejectedError
}

// API is the thin layer of clients the driver talks through.
type API struct {
	kube   restapi.Interface // typed kinds (Kubernetes and KubeVirt)
	dyn    dynamic.Interface
	config *rest.Config
	opts   Options

	// failFast (set during the pre-create check) makes the first
	// connection-level failure, kept in unreachable, end every later call.
	failFast    bool
	unreachable *unreachableError

	seen Seen // what this process has read already (see seen.go)
}

// New builds the layer's clients from cfg (internal/kubeapi's client
// configuration: rate limits, retries, user agent).
func New(cfg *rest.Config, o Options) (*API, error) {
	kube, err := restapi.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return FromClients(kube, dyn, cfg, o), nil
}

// FromClients is the layer over given clients (unit tests pass fakes);
// cfg may be nil when no caller needs it.
func FromClients(kube restapi.Interface, dyn dynamic.Interface, cfg *rest.Config, o Options) *API {
	return &API{kube: kube, dyn: dyn, config: cfg, opts: o}
}

// Kube is the typed client, for callers that make their own calls through
// it (guest/credentials).
func (a *API) Kube() restapi.Interface { return a.kube }

// Config is the client configuration the layer was built from (nil for
// FromClients without one).
func (a *API) Config() *rest.Config { return a.config }

// Timeout is the deadline of each single API call.
func (a *API) Timeout() time.Duration { return a.opts.CallTimeout }

// Seen is what this process has read already.
func (a *API) Seen() *Seen { return &a.seen }

// server is the API server's URL, for messages.
func (a *API) server() string {
	if a.config == nil {
		return ""
	}
	return a.config.Host
}

// Explain wraps the error of a call made outside API's methods (watches,
// the guest credential's calls) with the operation's name; a 401 becomes
// the credential-rejected error of Options.
func (a *API) Explain(op string, err error) error {
	return kubeapi.Explain(op, err, a.opts.Rejected)
}
