package driver

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/field"
)

// Fuzz targets for every flag the driver parses. Each feeds one flag's
// value (as Rancher or a user would pass it: plain or base64) through
// SetConfigFromFlags, then, when the configuration is accepted, through
// planning, the VM builder and the cloud-init merge. They assert: no panic,
// and every problem reported names its flag (or the machine name). Seeds
// are below and in testdata/fuzz/<FuzzName>/; `make fuzz` runs each target
// for a bounded time.

// problems are the single problems of a SetConfigFromFlags error.
func problems(err error) []error { return field.Problems(errors.Unwrap(err)) }

// fuzzFlag sets flag to value on an otherwise valid configuration and
// checks the outcome.
func fuzzFlag(t *testing.T, flag, value string) {
	fuzzFlags(t, map[string]any{flag: value})
}

// fuzzFlags sets several flags at once (flags that only matter together,
// like the static-address ones) and checks the outcome as fuzzFlag does.
func fuzzFlags(t *testing.T, values map[string]any) {
	t.Helper()
	d := New()
	d.MachineName = "c1-pool1-abcde"
	err := d.SetConfigFromFlags(optsWith(withValues(values)))
	if err != nil {
		for _, p := range problems(err) {
			if !strings.HasPrefix(p.Error(), "--harvester-") {
				t.Fatalf("problem does not name its flag: %q (values %q)", p, values)
			}
		}
		return
	}
	buildAccepted(t, d)
}

// buildAccepted plans and builds everything Create would from an accepted
// configuration; none of it may fail on what validation accepted.
func buildAccepted(t *testing.T, d *Driver) {
	in, err := d.inputs()
	if err != nil {
		t.Fatalf("accepted configuration does not parse: %v", err)
	}
	refs, err := in.ImageRefs(d.VMNamespace)
	if err != nil {
		t.Fatalf("accepted image names: %v", err)
	}
	images := map[string]vmspec.ImageFacts{}
	for _, r := range refs {
		images[r.String()] = vmspec.ImageFacts{StorageClassName: "longhorn-image", VirtualSizeBytes: 1 << 30}
	}
	plan, err := vmspec.PlanFromConfig(d.Config, in, d.MachineName, images)
	if err != nil {
		t.Fatalf("accepted configuration cannot be planned: %v", err)
	}
	if _, err := vmspec.BuildVM(plan); err != nil {
		t.Fatalf("accepted configuration cannot build a VM: %v", err)
	}
	for k, v := range plan.Labels {
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			t.Fatalf("label %s=%q is invalid: %v", k, v, msgs)
		}
	}
	userData, err := cloudinit.Build(cloudinit.Input{User: d.GetSSHUsername(), SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA k"},
		Password: d.SSHPassword, InstallQemuGuestAgent: true, UserData: []byte(d.UserData), CloudConfig: []byte(d.CloudConfig)})
	if err != nil {
		t.Fatalf("accepted user data does not build: %v", err)
	}
	if err := config.CheckSecretSize(len(userData), len(d.NetworkData), config.SecretParts(d.Config)); err != nil {
		t.Fatalf("accepted user data is over the Secret limit: %v", err)
	}
}

func fuzzSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
		f.Add(b64(s))
	}
}

func FuzzDiskInfo(f *testing.F) {
	fuzzSeeds(f, `{"disks":[{"imageName":"default/ubuntu-22.04","size":20,"bootOrder":1}]}`,
		`{"disks":[{"storageClassName":"longhorn","size":99999999999,"bus":"scsi","type":"cd-rom","hotPlugAble":true}]}`,
		`{"disks":[{"imageName":"a/b/c","bootOrder":-1},{"imageName":"x","bootOrder":1},{"imageName":"y","bootOrder":1}]}`,
		`{"disks":[]}`, `{"disks":null}`, `{"disks":[{"size":1e400}]}`, `{"unknown":1}`, `[]`)
	f.Fuzz(func(t *testing.T, v string) { fuzzFlag(t, config.FlagDiskInfo, v) })
}

func FuzzNetworkInfo(f *testing.F) {
	fuzzSeeds(f, `{"interfaces":[{"networkName":"default/vlan1","macAddress":"52:54:00:12:34:56","model":"e1000","type":"masquerade"}]}`,
		`{"interfaces":[{"networkName":"vlan1"},{"networkName":"Bad/Net","macAddress":"zz"}]}`, `{"interfaces":[]}`, `{"interfaces":[{}]}`)
	f.Fuzz(func(t *testing.T, v string) { fuzzFlag(t, config.FlagNetworkInfo, v) })
}

// FuzzStaticAddress fuzzes the static-address flags together with the
// interfaces they refer to: --harvester-static-interface is only looked at
// with a range, and indexes the machine's interfaces (nic--1 once panicked
// there, which a target fuzzing one flag at a time could not reach).
func FuzzStaticAddress(f *testing.F) {
	twoNICs := `{"interfaces":[{"networkName":"default/vlan1"},{"networkName":"default/vlan2","type":"masquerade"}]}`
	for _, s := range [][4]string{
		{"10.0.0.10-10.0.0.59/24", "10.0.0.1", "nic-0", ""},
		{"10.0.0.10-10.0.0.59/24", "10.0.0.1", "nic--1", ""},
		{"10.0.0.10-10.0.0.59/24", "", "nic--1", twoNICs},
		{"10.0.0.10-10.0.0.59/24", "10.0.0.0", "nic-1", twoNICs},
		{"127.0.0.2-127.0.0.9/8", "127.0.0.1", "nic-9", twoNICs},
		{"255.255.255.255-255.255.255.255/32", "", "nic-+0", ""},
		{"0.0.0.1-0.0.0.9/24", "0.0.0.255", "nic-00", `{"interfaces":[]}`},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, rng, gateway, iface, networkInfo string) {
		fuzzFlags(t, map[string]any{config.FlagStaticAddressRange: rng, config.FlagStaticGateway: gateway, config.FlagStaticInterface: iface, config.FlagNetworkInfo: networkInfo})
	})
}

func FuzzVGPUInfo(f *testing.F) {
	fuzzSeeds(f, `{"vGPURequests":[{"name":"gpu1","deviceName":"nvidia.com/GRID_T4-1Q"}]}`, `{"vGPURequests":[{"name":""}]}`, `{"vGPURequests":"x"}`)
	f.Fuzz(func(t *testing.T, v string) { fuzzFlag(t, config.FlagVGPUInfo, v) })
}

func FuzzVMAffinity(f *testing.F) {
	fuzzSeeds(f, `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["a"]}]}]}}}`,
		`{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"a":"b"}}}}]}}`,
		`{"podAffinity":{}}`, `{"nodeAffinity":5}`)
	f.Fuzz(func(t *testing.T, v string) { fuzzFlag(t, config.FlagVMAffinity, v) })
}

func FuzzVMLabels(f *testing.F) {
	fuzzSeeds(f, "app=web,example.com/team=db", "app", "kubevirt.io/x=y", "a=1,a=2", "a=,", " =x", "harvesterhci.io/creator=me")
	f.Fuzz(func(t *testing.T, v string) { fuzzFlag(t, config.FlagVMLabels, v) })
}

func FuzzUserData(f *testing.F) {
	fuzzSeeds(f, "#cloud-config\npackages: [htop]\nruncmd:\n- echo hi\n", "#!/bin/bash\necho hi\n",
		"## template: jinja\n#cloud-config\nruncmd:\n- echo {{ v1.local_hostname }}\n",
		"## template: jinja\n#cloud-config\n{% if true %}\npackages: [htop]\n{% endif %}\n",
		"#include\nhttps://example.com/a\n", "#cloud-boothook\necho x\n", "packages: [a]\n", "- a\n", "a: [\n",
		"Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/cloud-config\n\nruncmd: [a]\n--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\n--B--\n",
		"Content-Type: text/html\n\n<p>", "runcmd: &a [*a]\n", "write_files:\n- path: /x\n  content: \"a\\nb\"\n")
	f.Fuzz(func(t *testing.T, v string) { fuzzFlag(t, config.FlagUserData, v) })
}

func FuzzNetworkData(f *testing.F) {
	fuzzSeeds(f, "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n", "version: 1\nconfig:\n- type: physical\n  name: eth0\n",
		"network:\n  version: 2\n  vlans:\n    v: {id: 10, link: eth0}\n", "version: 2\nbonds:\n  b: {interfaces: eth0}\n", "version: 3\n", "[1]\n")
	f.Fuzz(func(t *testing.T, v string) { fuzzFlag(t, config.FlagNetworkData, v) })
}

func FuzzKubeconfigContent(f *testing.F) {
	fuzzSeeds(f, drivertest.Kubeconfig, "clusters: 5\n", "apiVersion: v1\nkind: Config\n",
		strings.Replace(drivertest.Kubeconfig, "token: secret-token", "exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/true", 1))
	f.Fuzz(func(t *testing.T, v string) {
		fuzzFlag(t, config.FlagKubeconfigContent, v)
		_, err := config.ParseKubeconfig(v)
		cfg, lerr := clientcmd.Load([]byte(v))
		if err == nil || lerr != nil {
			return
		}
		for _, u := range cfg.AuthInfos {
			for _, secret := range []string{u.Token, u.Password} {
				if len(secret) >= 4 && strings.Contains(err.Error(), secret) {
					t.Fatalf("a secret of the kubeconfig is in the error: %v", err)
				}
			}
		}
	})
}

// FuzzMachineName: machine names Rancher passes become a VM, Secret and
// labels; a name validation accepts must give valid object names and
// label values.
func FuzzMachineName(f *testing.F) {
	for _, s := range []string{"c1-pool1-abcde", "c-m-7x2kq-pool1-7d9f8-x7k2p", "a", strings.Repeat("a", 63), strings.Repeat("a", 64),
		"Bad_Name", "-a", "a-", "ünï", "a\nb", "a.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		d := New()
		d.MachineName = name
		err := d.SetConfigFromFlags(optsWith(validValues()))
		if err != nil {
			for _, p := range problems(err) {
				if !strings.HasPrefix(p.Error(), "machine name ") {
					t.Fatalf("problem does not name the machine name: %q", p)
				}
			}
			return
		}
		buildAccepted(t, d)
	})
}
