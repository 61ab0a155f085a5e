// Package plans holds the machine fixtures that vmspec's tests (an
// external test package) and those of the packages above it share: a base
// configuration, the images' facts and the plan of a configuration. Only
// tests import it.
package plans

import (
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

// Images are the facts of the images the fixtures use, as Harvester
// reports them (status.storageClassName, status.virtualSize).
var Images = map[string]vmspec.ImageFacts{
	"default/ubuntu-22.04": {StorageClassName: "longhorn-ubuntu-22.04", VirtualSizeBytes: 2361393152},
	"images/rocky":         {StorageClassName: "longhorn-rocky"},
}

// BaseConfig is the flag defaults with a kubeconfig, an image, a network
// and a cluster.
func BaseConfig() config.Config {
	c := config.Defaults()
	c.KubeconfigContent = drivertest.Kubeconfig
	c.ImageName = "default/ubuntu-22.04"
	c.NetworkName = "default/vlan1"
	c.ClusterName = "c1"
	return c
}

// Of parses c's JSON flags and plans the machine's VM.
func Of(t *testing.T, c config.Config, machineName string, images map[string]vmspec.ImageFacts) (vmspec.VMPlan, error) {
	t.Helper()
	in, err := config.ParseInputs(c)
	if err != nil {
		t.Fatalf("parse inputs: %v", err)
	}
	return vmspec.PlanFromConfig(c, in, machineName, images)
}
