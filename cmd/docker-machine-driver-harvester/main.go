// Command docker-machine-driver-harvester is the Harvester node driver
// plugin of rancher-machine.
package main

import (
	"github.com/rancher/machine/libmachine/drivers/plugin"

	"github.com/harvester-kit/harvester-machine/driver"
)

func main() {
	plugin.RegisterDriver(driver.New())
}
