package driver

import (
	"github.com/harvester-kit/harvester-machine/driver/config"
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
