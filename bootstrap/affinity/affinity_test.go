package affinity

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/internal/golden"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func TestAffinityGolden(t *testing.T) {
	cases := map[string]Spec{
		"zone-spread": {Zones: []string{"zone-a"}, Regions: []string{"region-1"}, Namespace: "default", ClusterName: "guest-a", Pool: "pool1"},
		"zones-only":  {Zones: []string{"zone-a", "zone-b"}},
		"required":    {Namespace: "default", MachineName: "guest-a-pool1-x7k2p", Required: true},
	}
	for name, spec := range cases {
		aff := golden.Must(Build(spec))
		golden.Assert(t, "affinity-"+name+".json", golden.Must(Format(aff, FormatJSON)))
		golden.Assert(t, "affinity-"+name+".b64", golden.Must(Format(aff, FormatBase64)))
	}
}

// The spread selector is the label value the driver gives the pool's VMs.
func TestSpreadSelectsThePoolsVMs(t *testing.T) {
	vm := harvester.MachineLabels("default", "guest-a-pool1-x7k2p", "guest-a")
	for _, spec := range []Spec{
		{Namespace: "default", ClusterName: "guest-a", Pool: "pool1"},
		{Namespace: "default", MachineName: "guest-a-pool1-abcde", Required: true},
	} {
		aff := golden.Must(Build(spec))
		var sel map[string]string
		if spec.Required {
			sel = aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels
		} else {
			sel = aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels
		}
		for k, v := range sel {
			if vm[k] != v {
				t.Errorf("%+v: selector %s=%s does not match the VM's labels %v", spec, k, v, vm)
			}
		}
		if sel[harvester.LabelMachineSet] != "default-guest-a-pool1" {
			t.Errorf("%+v: selector %v", spec, sel)
		}
	}
}

func TestAffinityErrors(t *testing.T) {
	cases := map[string]struct {
		spec Spec
		want []string
	}{
		"empty":            {Spec{}, []string{"nothing to do: give at least one of zone, region, pool, machine name"}},
		"bad zone":         {Spec{Zones: []string{"bad zone"}, Regions: []string{""}}, []string{"zone \"bad zone\"", "region \"\""}},
		"pool alone":       {Spec{Namespace: "default", Pool: "pool1"}, []string{"cluster name: required with pool"}},
		"pool and machine": {Spec{Namespace: "default", ClusterName: "c", Pool: "p", MachineName: "c-p-x"}, []string{"pool: give it or machine name"}},
		"bad names":        {Spec{Namespace: "Default", ClusterName: "C_1", Pool: "p 1"}, []string{"namespace \"Default\"", "cluster name \"C_1\"", "pool \"p 1\""}},
		"required alone":   {Spec{Zones: []string{"a"}, Required: true}, []string{"required: needs the pool to spread: pool, machine name"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Build(c.spec)
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("want %q in %v", w, err)
				}
			}
		})
	}
	aff := golden.Must(Build(Spec{Zones: []string{"a"}}))
	if _, err := Format(aff, "yaml"); err == nil || !strings.Contains(err.Error(), `format "yaml"`) {
		t.Errorf("bad format: %v", err)
	}
}
