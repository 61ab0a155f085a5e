package driver

import (
	"testing"

	"github.com/rancher/machine/libmachine/drivers"

	"github.com/harvester-kit/harvester-machine/driver/config"
)

func TestCloudConfigIsTheUserdataFlag(t *testing.T) {
	if got := drivers.DriverUserdataFlag(New()); got != config.FlagCloudConfig {
		t.Fatalf("rancher-machine would pass the install script through %q, want %q", got, config.FlagCloudConfig)
	}
}
