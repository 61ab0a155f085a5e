// Command harvester-bootstrap prepares guest clusters on Harvester:
// kubeconfigs, cloud-provider and CSI add-ons, cluster configuration.
package main

import (
	"os"

	"github.com/harvester-kit/harvester-machine/bootstrap/cli"
)

func main() {
	os.Exit(cli.Run(os.Args, os.Stdout, os.Stderr))
}
