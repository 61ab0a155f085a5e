package driver

import (
	"github.com/rancher/machine/libmachine/mcnflag"

	"github.com/harvester-kit/harvester-machine/driver/config"
)

// GetCreateFlags returns the flags of the driver, in their fixed order.
func (d *Driver) GetCreateFlags() []mcnflag.Flag {
	return config.CreateFlags()
}
