// Package driver is the Harvester node driver for rancher-machine: it
// provisions KubeVirt VMs in one namespace of a Harvester cluster.
package driver

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/rancher/machine/libmachine/drivers"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

var _ drivers.Driver = (*Driver)(nil)

// Driver implements drivers.Driver for Harvester.
type Driver struct {
	*drivers.BaseDriver
	config.Config
	machine.Ownership
	machine.Held

	// cmd is what this process knows of the current command; never stored.
	cmd command
}

// command is what the driver knows of the command it runs, for this
// process only: the parsed JSON flags (see inputs), the Harvester API of
// the command's credential (lazily built), and whether that credential is
// confirmed to point at the machine's cluster (see session).
type command struct {
	parsed *config.Inputs
	api    *harvesterapi.API
	// kubeconfig is a credential from this command's arguments or
	// environment: used for the command, persisted only on request.
	kubeconfig string
	confirmed  bool
	// storeOnConfirm is the command's credential given with
	// --update-config: it replaces the stored one once it is confirmed to
	// point at the machine's cluster (see confirmed).
	storeOnConfirm string
}

// New returns a driver with the flag defaults, for plugin.RegisterDriver.
func New() *Driver {
	return &Driver{
		BaseDriver: &drivers.BaseDriver{SSHUser: drivers.DefaultSSHUser, SSHPort: drivers.DefaultSSHPort},
		Config:     config.Defaults(),
	}
}

// DriverName returns "harvester".
func (d *Driver) DriverName() string { return config.DriverName }

// UnmarshalJSON loads the stored machine config and then re-reads the
// credentials from this process's arguments and environment (the plugin
// process gets rancher-machine's arguments and environment): Rancher passes
// fresh credentials to `rm` because the stored ones may have been rotated
// since create. The fresh credential is used for this command; it replaces
// the stored one (which rancher-machine saves back after most commands)
// only when the command line asks for it with --update-config, and only
// once it is confirmed to point at the machine's cluster (a refused
// credential is never stored).
func (d *Driver) UnmarshalJSON(data []byte) error {
	type plain Driver
	target := plain(*d)
	if err := json.Unmarshal(data, &target); err != nil {
		return fmt.Errorf("load harvester driver config: %w", err)
	}
	*d = Driver(target)
	d.useCommandCredentials(os.Args, os.Getenv)
	return nil
}

// useCommandCredentials takes the command's credential (arguments or
// environment) for this command, and into the stored state only when args
// has --update-config and the credential is confirmed (see confirmed).
func (d *Driver) useCommandCredentials(args []string, getenv func(string) string) {
	d.cmd = command{}
	if fresh, ok := config.CommandCredential(args, getenv); ok {
		d.cmd.kubeconfig = fresh
		if config.UpdateConfigRequested(args) {
			d.cmd.storeOnConfirm = fresh
		}
	}
}

// confirmed records that the command's credential points at the machine's
// cluster, and stores it when --update-config asked for that.
func (d *Driver) confirmed() {
	d.cmd.confirmed = true
	if d.cmd.storeOnConfirm != "" {
		d.KubeconfigContent, d.cmd.storeOnConfirm = d.cmd.storeOnConfirm, ""
	}
}

// kubeconfig is the credential of this command.
func (d *Driver) kubeconfig() string {
	if d.cmd.kubeconfig != "" {
		return d.cmd.kubeconfig
	}
	return d.KubeconfigContent
}

// GetSSHHostname returns the VM's address.
func (d *Driver) GetSSHHostname() (string, error) { return d.GetIP() }

// GetURL returns the Docker URL of the machine (tcp://<ip>:2376).
func (d *Driver) GetURL() (string, error) {
	ip, err := d.GetIP()
	if err != nil {
		return "", err
	}
	return "tcp://" + net.JoinHostPort(ip, strconv.Itoa(2376)), nil
}

// GetSSHUsername returns the SSH user.
func (d *Driver) GetSSHUsername() string {
	if d.SSHUser == "" {
		return drivers.DefaultSSHUser
	}
	return d.SSHUser
}
