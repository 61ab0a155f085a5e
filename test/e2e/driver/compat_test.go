package driver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rancher/machine/libmachine/drivers"
	"github.com/rancher/machine/libmachine/drivers/plugin/localbinary"
	rpcdriver "github.com/rancher/machine/libmachine/drivers/rpc"
	"github.com/rancher/machine/libmachine/mcnflag"
	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// schemaField is one field of the machine-config schema Rancher derives
// from a node driver's GetCreateFlags.
type schemaField struct {
	Field    string  `json:"field"`
	Type     string  `json:"type"`
	Default  *string `json:"default,omitempty"`
	Flag     string  `json:"flag"`
	FlagType string  `json:"flagType"`
	Env      string  `json:"env"`
}

// rancherSchemaField derives a schema field from a flag as Rancher does:
// the "harvester-" prefix dropped, the rest lowerCamelCase; StringFlag and
// IntFlag are strings, BoolFlag a boolean, StringSliceFlag an array.
func rancherSchemaField(f mcnflag.Flag) schemaField {
	f = flagValue(f)
	parts := strings.Split(strings.TrimPrefix(f.String(), "harvester-"), "-")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	s := schemaField{Field: strings.Join(parts, ""), Flag: f.String()}
	def := fmt.Sprint(f.Default())
	switch v := f.(type) {
	case mcnflag.StringFlag:
		s.Type, s.FlagType, s.Env = "string", "string", v.EnvVar
	case mcnflag.IntFlag:
		s.Type, s.FlagType, s.Env = "string", "int", v.EnvVar
	case mcnflag.BoolFlag:
		s.Type, s.FlagType, s.Env, def = "boolean", "bool", v.EnvVar, "false"
	case mcnflag.StringSliceFlag:
		s.Type, s.FlagType, s.Env = "array", "stringSlice", v.EnvVar
		def = strings.Join(v.Value, ",")
	default:
		s.Type = fmt.Sprintf("unknown %T", f)
	}
	s.Default = &def
	return s
}

// flagValue undoes the pointers the RPC decoding gives (the rpc package
// registers *mcnflag.StringFlag etc. with gob).
func flagValue(f mcnflag.Flag) mcnflag.Flag {
	switch v := f.(type) {
	case *mcnflag.StringFlag:
		return *v
	case *mcnflag.IntFlag:
		return *v
	case *mcnflag.BoolFlag:
		return *v
	case *mcnflag.StringSliceFlag:
		return *v
	}
	return f
}

// driverFlagsOverRPC loads bin/docker-machine-driver-harvester the way
// Rancher and rancher-machine do (a libmachine plugin over RPC) and asks
// it for GetCreateFlags.
func driverFlagsOverRPC(t *testing.T) []mcnflag.Flag {
	t.Helper()
	t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The plugin library marks this process as a plugin host in its
	// environment; t.Setenv puts that back after the test, or every later
	// rancher-machine would start as a plugin.
	t.Setenv(localbinary.PluginEnvKey, "")
	t.Setenv(localbinary.PluginEnvDriverName, "")
	factory := rpcdriver.NewRPCClientDriverFactory()
	defer func() { _ = factory.Close() }()
	raw, err := json.Marshal(&drivers.BaseDriver{MachineName: "schema-probe", StorePath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	client, err := factory.NewRPCClientDriver("harvester", raw)
	if err != nil {
		t.Fatalf("load the driver plugin: %v", err)
	}
	flags := client.GetCreateFlags()
	if len(flags) == 0 {
		t.Fatal("GetCreateFlags over RPC returned no flags")
	}
	return flags
}

// TestRancherSchemaKeepsUpstreamFlags: every field of the upstream v1.0.6
// driver's schema is still there with its type, environment variable and
// default, so machine configs stored by existing Rancher installations
// keep working; and cloud-config is the first user-data-like flag, the one
// rancher-machine hands the install script to.
//
// Sequential: t.Setenv changes the environment every rancher-machine of
// the other tests inherits.
func TestRancherSchemaKeepsUpstreamFlags(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "upstream-v1.0.6-flags.json"))
	if err != nil {
		t.Fatal(err)
	}
	var upstream struct {
		Flags []schemaField `json:"flags"`
	}
	if err := json.Unmarshal(raw, &upstream); err != nil {
		t.Fatal(err)
	}
	flags := driverFlagsOverRPC(t)
	derived := map[string]schemaField{}
	for _, f := range flags {
		s := rancherSchemaField(f)
		if _, dup := derived[s.Field]; dup {
			t.Errorf("two flags derive schema field %s", s.Field)
		}
		derived[s.Field] = s
	}
	for _, want := range upstream.Flags {
		got, ok := derived[want.Field]
		switch {
		case !ok:
			t.Errorf("schema field %s (flag --%s) was removed or renamed", want.Field, want.Flag)
		case got.Flag != want.Flag || got.Type != want.Type || got.FlagType != want.FlagType:
			t.Errorf("schema field %s: flag --%s %s (schema %s), upstream --%s %s (schema %s)", want.Field, got.Flag, got.FlagType, got.Type, want.Flag, want.FlagType, want.Type)
		case got.Env != want.Env:
			t.Errorf("flag --%s: environment variable %q, upstream %q", want.Flag, got.Env, want.Env)
		case want.Default != nil && *got.Default != *want.Default:
			t.Errorf("flag --%s: default %q, upstream %q", want.Flag, *got.Default, *want.Default)
		}
	}
	if first := firstUserDataFlag(flags); first != "harvester-cloud-config" {
		t.Errorf("first user-data-like flag is %q: rancher-machine would put the install script there instead of --harvester-cloud-config", first)
	}
}

// firstUserDataFlag is the flag rancher-machine writes the custom install
// script's cloud-config to: the first whose name contains user-data,
// userdata, custom-data or cloud-config.
func firstUserDataFlag(flags []mcnflag.Flag) string {
	for _, f := range flags {
		for _, s := range []string{"user-data", "userdata", "custom-data", "cloud-config"} {
			if strings.Contains(f.String(), s) {
				return f.String()
			}
		}
	}
	return ""
}

// TestRancherDocUsesDerivedFields: every HarvesterConfig example in
// docs/rancher.md names only fields Rancher derives from the driver's
// flags, each with the YAML type of its schema field (string, boolean or
// array of strings), so the page never tells a user to set a field
// Rancher does not have.
//
// Sequential: t.Setenv changes the environment every rancher-machine of
// the other tests inherits.
func TestRancherDocUsesDerivedFields(t *testing.T) {
	root, err := simtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "rancher.md"))
	if err != nil {
		t.Fatal(err)
	}
	derived := map[string]schemaField{}
	for _, f := range driverFlagsOverRPC(t) {
		s := rancherSchemaField(f)
		derived[s.Field] = s
	}
	configs := harvesterConfigExamples(t, string(doc))
	if len(configs) == 0 {
		t.Fatal("docs/rancher.md has no HarvesterConfig example in a yaml block")
	}
	for i, cfg := range configs {
		for j := 0; j+1 < len(cfg.Content); j += 2 {
			key, val := cfg.Content[j].Value, cfg.Content[j+1]
			if key == "apiVersion" || key == "kind" || key == "metadata" {
				continue
			}
			s, ok := derived[key]
			if !ok {
				t.Errorf("example %d, line %d of its block: %s is not a field Rancher derives from the driver's flags", i+1, cfg.Content[j].Line, key)
				continue
			}
			if got := yamlSchemaType(val); got != s.Type {
				t.Errorf("example %d, line %d of its block: %s is a YAML %s, Rancher's schema field (flag --%s) is a %s", i+1, val.Line, key, got, s.Flag, s.Type)
			}
		}
	}
}

// harvesterConfigExamples returns the mapping of every YAML document of
// kind HarvesterConfig in the markdown's ```yaml blocks.
func harvesterConfigExamples(t *testing.T, markdown string) []*yaml.Node {
	t.Helper()
	var out []*yaml.Node
	blocks := strings.Split(markdown, "```yaml\n")
	for _, b := range blocks[1:] {
		end := strings.Index(b, "```")
		if end < 0 {
			t.Fatal("docs/rancher.md: a yaml block has no end")
		}
		dec := yaml.NewDecoder(strings.NewReader(b[:end]))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("docs/rancher.md: a yaml block does not parse: %v", err)
				}
				break
			}
			m := n.Content[0]
			for j := 0; j+1 < len(m.Content); j += 2 {
				if m.Content[j].Value == "kind" && m.Content[j+1].Value == "HarvesterConfig" {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// yamlSchemaType is the schema type a YAML value has: string, boolean,
// array (of strings) or what else it is.
func yamlSchemaType(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		return "string"
	case n.Kind == yaml.ScalarNode && n.Tag == "!!bool":
		return "boolean"
	case n.Kind == yaml.SequenceNode:
		for _, e := range n.Content {
			if e.Tag != "!!str" {
				return "array with a " + e.Tag + " item"
			}
		}
		return "array"
	}
	return n.Tag
}
