package driver

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

// client returns the Harvester API of the command's credential, built
// once per process.
func (d *Driver) client() (*harvesterapi.API, error) {
	if d.cmd.api != nil {
		return d.cmd.api, nil
	}
	cfg, err := d.harvesterConfig()
	if err != nil {
		return nil, err
	}
	api, err := harvesterapi.New(cfg, d.apiOptions())
	if err != nil {
		return nil, err
	}
	d.cmd.api = api
	return api, nil
}

// harvesterConfig is the client configuration of the command's credential:
// the one validation parsed (create), else parsed now
// (config.ParseKubeconfig).
func (d *Driver) harvesterConfig() (*rest.Config, error) {
	if p := d.cmd.parsed; p != nil && p.Harvester != nil && d.cmd.kubeconfig == "" {
		return p.Harvester, nil
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

// newMachine is the machine as the flows and the concern packages see
// it, built once per libmachine call from the driver's stored state and
// passed to them by hand; store takes back what a flow recorded in it.
func (d *Driver) newMachine() *machine.Machine {
	return &machine.Machine{Config: d.Config, Ownership: d.Ownership, Held: d.Held, Name: d.MachineName}
}

// store records in the driver's state what a flow learned: the VM's UID,
// the cluster's identity, the held address.
func (d *Driver) store(m *machine.Machine) { d.Ownership, d.Held = m.Ownership, m.Held }

// session returns the API of the command's credential once the credential
// is confirmed to point at the cluster the machine was created on. Every
// command goes through it, so a wrong cluster changes nothing and NotFound
// is only ever read on the right cluster.
func (d *Driver) session(ctx context.Context) (*harvesterapi.API, error) {
	api, err := d.client()
	if err != nil {
		return nil, err
	}
	if d.cmd.confirmed {
		return api, nil
	}
	if err := d.newMachine().ConfirmCluster(ctx, api); err != nil {
		return nil, fmt.Errorf("machine %s: %w", d.MachineName, err)
	}
	d.confirmed()
	return api, nil
}
