package config

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

func TestGuestServer(t *testing.T) {
	c := Config{KubeconfigContent: drivertest.Kubeconfig}
	harvester, err := ParseKubeconfig(c.KubeconfigContent)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := GuestServer(c, harvester); err != nil || got != "https://127.0.0.1:6443" {
		t.Errorf("default: %q %v, want the kubeconfig's server", got, err)
	}
	c.CloudProviderServer = "https://10.0.0.10:6443"
	if got, err := GuestServer(c, harvester); err != nil || got != c.CloudProviderServer {
		t.Errorf("flag: %q %v, want %q", got, err, c.CloudProviderServer)
	}
}

func TestCloudProviderFlagNamesAvoidUserdataWords(t *testing.T) {
	for _, f := range []string{FlagCloudProvider, FlagCloudProviderServer} {
		for _, w := range []string{"user-data", "userdata", "custom-data", "cloud-config"} {
			if strings.Contains(f, w) {
				t.Errorf("flag %s contains %q: rancher-machine would pass its install script through it", f, w)
			}
		}
	}
}
