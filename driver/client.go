package driver

import (
	"time"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// client returns the Harvester API of the command's credential, built
// once per process from the kubeconfig parsed once (internal/kubeapi's
// client configuration: rate limits, retries, user agent).
func (d *Driver) client() (*harvesterapi.API, error) {
	if d.api != nil {
		return d.api, nil
	}
	kubeconfig := d.kubeconfig()
	if err := checkKubeconfigContent(kubeconfig); err != nil {
		return nil, flagError(FlagKubeconfigContent, err)
	}
	cfg, err := kubeapi.ConfigFromKubeconfig([]byte(kubeconfig), BinaryName)
	if err != nil {
		return nil, flagProblem(FlagKubeconfigContent, "is not a usable kubeconfig: %v", err).Because(err)
	}
	api, err := harvesterapi.New(cfg, d.apiOptions())
	if err != nil {
		return nil, err
	}
	d.api = api
	return api, nil
}

// apiOptions are the call deadline and the messages of the driver's API.
func (d *Driver) apiOptions() harvesterapi.Options {
	timeout := time.Duration(d.APITimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = DefaultAPITimeoutSeconds * time.Second
	}
	return harvesterapi.Options{CallTimeout: timeout, TimeoutSource: flagField(FlagAPITimeout), Rejected: credentialsRejected}
}
