// Command docker-machine-driver-harvester is the Harvester node driver
// plugin of rancher-machine.
package main

import (
	"github.com/harvester-kit/harvester-machine/driver"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/internal/pluginlog"
	"github.com/harvester-kit/harvester-machine/internal/pluginserver"
	"github.com/harvester-kit/harvester-machine/internal/version"
)

func main() {
	pluginlog.Route()
	pluginlog.Debugf("%s", version.String(config.BinaryName))
	pluginserver.Serve(driver.New())
}
