package driver

import (
	"time"

	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

// client returns the Harvester API of the command's credential, built
// once per process.
func (d *Driver) client() (*harvesterapi.API, error) {
	if d.api != nil {
		return d.api, nil
	}
	cfg, err := d.harvesterConfig()
	if err != nil {
		return nil, err
	}
	api, err := harvesterapi.New(cfg, d.apiOptions())
	if err != nil {
		return nil, err
	}
	d.api = api
	return api, nil
}

// harvesterConfig is the client configuration of the command's credential:
// the one validation parsed (create), else parsed now
// (config.ParseKubeconfig).
func (d *Driver) harvesterConfig() (*rest.Config, error) {
	if d.parsed != nil && d.parsed.Harvester != nil && d.sessionKubeconfig == "" {
		return d.parsed.Harvester, nil
	}
	cfg, err := config.ParseKubeconfig(d.kubeconfig())
	if err != nil {
		return nil, config.FlagError(config.FlagKubeconfigContent, err)
	}
	return cfg, nil
}

// apiOptions are the call deadline and the messages of the driver's API.
func (d *Driver) apiOptions() harvesterapi.Options {
	timeout := time.Duration(d.APITimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = config.DefaultAPITimeoutSeconds * time.Second
	}
	return harvesterapi.Options{CallTimeout: timeout, TimeoutSource: config.FlagField(config.FlagAPITimeout), Rejected: config.CredentialsRejected}
}

// machine is the machine as the concern packages see it, built once per
// command (the driver's stored state, shared, and this command's facts)
// and passed to them by hand.
func (d *Driver) machine() *machine.Machine {
	if d.m == nil || d.m.Name != d.MachineName {
		d.m = &machine.Machine{Config: &d.Config, Ownership: &d.Ownership, Held: &d.Held, Name: d.MachineName}
	}
	return d.m
}
