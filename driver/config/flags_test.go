package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rancher/machine/libmachine/mcnflag"
)

func flagInfo(f mcnflag.Flag) (kind, env string) {
	switch v := f.(type) {
	case mcnflag.StringFlag:
		return "string", v.EnvVar
	case mcnflag.IntFlag:
		return "int", v.EnvVar
	case mcnflag.BoolFlag:
		return "bool", v.EnvVar
	case mcnflag.StringSliceFlag:
		return "[]string", v.EnvVar
	}
	return "?", ""
}

func TestUpstreamFlagsUnchanged(t *testing.T) {
	got := map[string]mcnflag.Flag{}
	for _, f := range CreateFlags() {
		if _, dup := got[f.String()]; dup {
			t.Errorf("flag %s defined twice", f.String())
		}
		got[f.String()] = f
	}
	for _, u := range upstreamFlags {
		f, ok := got[u.name]
		if !ok {
			t.Errorf("upstream flag %s is missing", u.name)
			continue
		}
		kind, env := flagInfo(f)
		if kind != u.kind {
			t.Errorf("%s: type %s, want %s", u.name, kind, u.kind)
		}
		if f.Default() != u.def {
			t.Errorf("%s: default %v, want %v", u.name, f.Default(), u.def)
		}
		wantEnv := strings.ToUpper(strings.ReplaceAll(u.name, "-", "_"))
		if env != wantEnv {
			t.Errorf("%s: env var %s, want %s", u.name, env, wantEnv)
		}
	}
}

func TestNewFlags(t *testing.T) {
	want := map[string]struct {
		kind string
		def  any
	}{
		FlagSkipQemuGuestAgent:  {"bool", false},
		FlagWaitTimeout:         {"int", DefaultWaitTimeoutSeconds},
		FlagAPITimeout:          {"int", DefaultAPITimeoutSeconds},
		FlagVMLabels:            {"string", ""},
		FlagCloudProvider:       {"string", ""},
		FlagCloudProviderServer: {"string", ""},
		FlagStaticAddressRange:  {"string", ""},
		FlagStaticGateway:       {"string", ""},
		FlagStaticDNS:           {"[]string", "[]"},
		FlagStaticInterface:     {"string", ""},
	}
	n := 0
	for _, f := range CreateFlags() {
		if !strings.HasPrefix(f.String(), "harvester-") {
			t.Errorf("flag %s lacks the harvester- prefix", f.String())
		}
		if w, ok := want[f.String()]; ok {
			n++
			if kind, _ := flagInfo(f); kind != w.kind || fmt.Sprint(f.Default()) != fmt.Sprint(w.def) {
				t.Errorf("%s: %s %v, want %s %v", f.String(), kind, f.Default(), w.kind, w.def)
			}
		}
	}
	if n != len(want) || len(CreateFlags()) != len(upstreamFlags)+len(want) {
		t.Errorf("flag count %d, want %d upstream + %d new", len(CreateFlags()), len(upstreamFlags), len(want))
	}
}

// upstreamFlags is the flag set of the upstream driver v1.0.6: name, type,
// default. The env var of each is HARVESTER_<NAME>.
var upstreamFlags = []struct {
	name, kind string
	def        any
}{
	{"harvester-cloud-config", "string", ""},
	{"harvester-cluster-id", "string", ""},
	{"harvester-cluster-name", "string", ""},
	{"harvester-cluster-type", "string", ""},
	{"harvester-cpu-count", "int", 2},
	{"harvester-cpu-model", "string", ""},
	{"harvester-cpu-pinning", "bool", false},
	{"harvester-disk-bus", "string", ""},
	{"harvester-disk-info", "string", ""},
	{"harvester-disk-size", "int", 0},
	{"harvester-enable-efi", "bool", false},
	{"harvester-enable-secure-boot", "bool", false},
	{"harvester-enable-tpm", "bool", false},
	{"harvester-image-name", "string", ""},
	{"harvester-isolate-emulator-thread", "bool", false},
	{"harvester-key-pair-name", "string", ""},
	{"harvester-kubeconfig-content", "string", ""},
	{"harvester-memory-size", "int", 4},
	{"harvester-network-data", "string", ""},
	{"harvester-network-info", "string", ""},
	{"harvester-network-model", "string", ""},
	{"harvester-network-name", "string", ""},
	{"harvester-network-type", "string", ""},
	{"harvester-reserved-memory-size", "int", -1},
	{"harvester-ssh-password", "string", ""},
	{"harvester-ssh-port", "int", 22},
	{"harvester-ssh-private-key-path", "string", ""},
	{"harvester-ssh-user", "string", "root"},
	{"harvester-user-data", "string", ""},
	{"harvester-vgpu-info", "string", ""},
	{"harvester-vm-affinity", "string", ""},
	{"harvester-vm-namespace", "string", "default"},
}
