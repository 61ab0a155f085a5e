package driver

import (
	"fmt"
	"time"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var (
	gvrSetting  = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
	gvrImage    = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "virtualmachineimages"}
	gvrKeyPair  = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "keypairs"}
	gvrNetwork  = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
	serverVerID = "server-version"
)

// harvesterAPI is the thin layer of clients the driver talks through.
type harvesterAPI struct {
	kube    restapi.Interface // typed kinds (Kubernetes and KubeVirt)
	dyn     dynamic.Interface
	timeout time.Duration
	server  string // the kubeconfig's server, for messages

	// failFast (set during the pre-create check) makes the first
	// connection-level failure, kept in unreachable, end every later call.
	failFast    bool
	unreachable *unreachableError

	seen seen // what this process has read already (see cache.go)
}

func newAPI(kubeconfig string, callTimeout time.Duration) (*harvesterAPI, error) {
	if err := checkKubeconfigContent(kubeconfig); err != nil {
		return nil, fmt.Errorf("--%s: %w", FlagKubeconfigContent, err)
	}
	cfg, err := kubeapi.ConfigFromKubeconfig([]byte(kubeconfig), "docker-machine-driver-harvester")
	if err != nil {
		return nil, fmt.Errorf("--%s is not a usable kubeconfig: %w", FlagKubeconfigContent, err)
	}
	kube, err := restapi.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &harvesterAPI{kube: kube, dyn: dyn, timeout: callTimeout, server: cfg.Host}, nil
}

// client returns the API of the current credentials.
func (d *Driver) client() (*harvesterAPI, error) {
	if d.api != nil {
		return d.api, nil
	}
	timeout := time.Duration(d.APITimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = DefaultAPITimeoutSeconds * time.Second
	}
	api, err := newAPI(d.kubeconfig(), timeout)
	if err != nil {
		return nil, err
	}
	d.api = api
	return api, nil
}

func settingValue(s *hvSetting) string {
	if s.Value != "" {
		return s.Value
	}
	return s.Default
}

// conditionTrue reports whether a Harvester condition is True.
func conditionTrue(conds []hvCondition, t string) (bool, string) {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == "True", c.Message
		}
	}
	return false, ""
}
