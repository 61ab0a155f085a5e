// Package driver is the Harvester node driver for rancher-machine: it
// provisions KubeVirt VMs in one namespace of a Harvester cluster.
package driver

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/rancher/machine/libmachine/drivers"
)

// DriverName is the name rancher-machine knows the driver by.
const DriverName = "harvester"

// Driver implements drivers.Driver for Harvester.
type Driver struct {
	*drivers.BaseDriver
	Config

	// api is the Harvester API of the current credentials (lazily built).
	api *harvesterAPI
}

// New returns a driver with the flag defaults, for plugin.RegisterDriver.
func New() *Driver {
	return &Driver{
		BaseDriver: &drivers.BaseDriver{SSHUser: drivers.DefaultSSHUser, SSHPort: drivers.DefaultSSHPort},
		Config: Config{
			VMNamespace: DefaultNamespace, CPUCount: DefaultCPUCount, MemoryGiB: DefaultMemoryGiB,
			ReservedMemoryMiB:  DefaultReservedMemoryMiB,
			WaitTimeoutSeconds: DefaultWaitTimeoutSeconds, APITimeoutSeconds: DefaultAPITimeoutSeconds,
		},
	}
}

// DriverName returns "harvester".
func (d *Driver) DriverName() string { return DriverName }

// UnmarshalJSON loads the stored machine config and then re-reads the
// credentials from this process's arguments and environment: Rancher passes
// fresh credentials to `rm --update-config` (and other commands) because the
// stored ones may have been rotated since create.
func (d *Driver) UnmarshalJSON(data []byte) error {
	type plain Driver
	target := plain(*d)
	if err := json.Unmarshal(data, &target); err != nil {
		return fmt.Errorf("load harvester driver config: %w", err)
	}
	*d = Driver(target)
	d.api = nil
	if fresh, ok := credentialsFrom(os.Args, os.Getenv); ok {
		d.KubeconfigContent = fresh
	}
	return nil
}

// credentialsFrom returns the kubeconfig given as --harvester-kubeconfig-content
// in args (either "--flag=value" or "--flag value"; a value may contain '=')
// or else in HARVESTER_KUBECONFIG_CONTENT, decoded if it is base64.
func credentialsFrom(args []string, getenv func(string) string) (string, bool) {
	long := "--" + FlagKubeconfigContent
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, long+"="); ok && v != "" {
			return decodePlainOrBase64(v, isKubeconfig), true
		}
		if a == long && i+1 < len(args) && args[i+1] != "" && !strings.HasPrefix(args[i+1], "-") {
			return decodePlainOrBase64(args[i+1], isKubeconfig), true
		}
	}
	if v := getenv(envVar(FlagKubeconfigContent)); v != "" {
		return decodePlainOrBase64(v, isKubeconfig), true
	}
	return "", false
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
