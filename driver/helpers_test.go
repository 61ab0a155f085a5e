package driver

import (
	"encoding/json"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
)

// golden compares got with testdata/name (rewritten with -update).
var golden = goldenfile.Assert

func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, name, append(b, '\n'))
}

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

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: h
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
contexts:
- name: h
  context:
    cluster: h
    user: u
    namespace: default
current-context: h
users:
- name: u
  user:
    token: secret-token
`

// planOf parses c's JSON flags and plans the machine's VM.
func planOf(t *testing.T, c config.Config, machineName string, images map[string]vmspec.ImageFacts) (vmspec.VMPlan, error) {
	t.Helper()
	in, err := vmspec.ParseInputs(c)
	if err != nil {
		t.Fatalf("parse inputs: %v", err)
	}
	return vmspec.PlanFromConfig(c, in, machineName, images)
}
