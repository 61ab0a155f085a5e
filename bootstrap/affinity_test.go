package bootstrap

import (
	"strings"
	"testing"
)

func TestAffinityGolden(t *testing.T) {
	cases := map[string]AffinitySpec{
		"zone-spread": {Zones: []string{"zone-a"}, Regions: []string{"region-1"}, SpreadLabel: "harvesterhci.io/machineSetName=pool1"},
		"zones-only":  {Zones: []string{"zone-a", "zone-b"}},
		"required":    {SpreadLabel: "harvesterhci.io/machineSetName=pool1", Required: true},
	}
	for name, spec := range cases {
		aff := must(BuildAffinity(spec))
		golden(t, "affinity-"+name+".json", must(FormatAffinity(aff, "json")))
		golden(t, "affinity-"+name+".b64", must(FormatAffinity(aff, FormatBase64)))
	}
}

func TestAffinityErrors(t *testing.T) {
	cases := map[string]struct {
		spec AffinitySpec
		want []string
	}{
		"empty":          {AffinitySpec{}, []string{"nothing to do"}},
		"bad zone":       {AffinitySpec{Zones: []string{"bad zone"}, Regions: []string{""}}, []string{"zone \"bad zone\"", "region \"\""}},
		"bad label":      {AffinitySpec{SpreadLabel: "novalue"}, []string{"spread-label \"novalue\""}},
		"required alone": {AffinitySpec{Zones: []string{"a"}, Required: true}, []string{"required: needs"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := BuildAffinity(c.spec)
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("want %q in %v", w, err)
				}
			}
		})
	}
	aff := must(BuildAffinity(AffinitySpec{Zones: []string{"a"}}))
	if _, err := FormatAffinity(aff, "yaml"); err == nil {
		t.Error("bad format accepted")
	}
}

func TestNodeDriver(t *testing.T) {
	sum := must(SHA256(strings.NewReader("driver-binary")))
	if sum != "04fc498b3321147b26babc88a4323c6162d23c2a5e3679c56bda6c3abbb1e79e" {
		t.Fatalf("sum %s", sum)
	}
	out := must(BuildNodeDriver(NodeDriverSpec{Name: "harvester", URL: "https://releases.example.com/d/docker-machine-driver-harvester", Checksum: sum, WhitelistDomains: []string{"mirror.example.com"}}))
	golden(t, "nodedriver.yaml", out)
	_, err := BuildNodeDriver(NodeDriverSpec{Name: "Bad Name", URL: "ftp://x", UIURL: "nope", Checksum: "abc"})
	for _, w := range []string{"name \"Bad Name\"", "url \"ftp://x\"", "ui-url \"nope\"", "checksum"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("want %q in %v", w, err)
		}
	}
}
