package driver

import (
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

// fakeOpts implements drivers.DriverOptions from a map, with flag defaults.
type fakeOpts map[string]any

func optsWith(values map[string]any) fakeOpts {
	o := fakeOpts{}
	for _, f := range config.CreateFlags() {
		o[f.String()] = f.Default()
	}
	for k, v := range values {
		o[k] = v
	}
	return o
}

func (o fakeOpts) String(k string) string        { s, _ := o[k].(string); return s }
func (o fakeOpts) StringSlice(k string) []string { s, _ := o[k].([]string); return s }
func (o fakeOpts) Int(k string) int              { i, _ := o[k].(int); return i }
func (o fakeOpts) Bool(k string) bool            { b, _ := o[k].(bool); return b }

// planOf parses c's JSON flags and plans the machine's VM.
func planOf(t *testing.T, c config.Config, machineName string, images map[string]vmspec.ImageFacts) (vmspec.VMPlan, error) {
	t.Helper()
	in, err := config.ParseInputs(c)
	if err != nil {
		t.Fatalf("parse inputs: %v", err)
	}
	return vmspec.PlanFromConfig(c, in, machineName, images)
}

var testImages = map[string]vmspec.ImageFacts{
	"default/ubuntu-22.04": {StorageClassName: "longhorn-ubuntu-22.04", VirtualSizeBytes: 2361393152},
	"images/rocky":         {StorageClassName: "longhorn-rocky"},
}

func baseConfig() config.Config {
	c := New().Config
	c.KubeconfigContent = drivertest.Kubeconfig
	c.ImageName = "default/ubuntu-22.04"
	c.NetworkName = "default/vlan1"
	c.ClusterName = "c1"
	return c
}
