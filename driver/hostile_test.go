package driver

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

// validateErr runs SetConfigFromFlags with values added to a valid config.
func validateErr(t *testing.T, values map[string]any) error {
	t.Helper()
	d := New()
	d.MachineName = "c1-pool1-abcde"
	return d.SetConfigFromFlags(optsWith(withValues(values)))
}

// Sizes that would overflow a quantity are rejected naming the flag and the
// largest valid value (they used to become int64-max quantities).
func TestOversizedValuesRejected(t *testing.T) {
	cases := []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"memory", map[string]any{config.FlagMemorySize: 9999999999}, []string{"--harvester-memory-size: 9999999999 GiB is too large", "largest valid value is 8589934591"}},
		{"disk", map[string]any{config.FlagDiskSize: 99999999999}, []string{"--harvester-disk-size: 99999999999 GiB is too large", "largest valid value is 8589934591"}},
		{"reserved memory", map[string]any{config.FlagMemorySize: 9999999999, config.FlagReservedMemorySize: 1 << 62}, []string{"--harvester-reserved-memory-size:", "largest valid value is " + strconv.Itoa(config.MaxReservedMemoryMiB)}},
		{"disk-info size", map[string]any{config.FlagDiskInfo: `{"disks":[{"imageName":"default/ubuntu-22.04","size":99999999999}]}`}, []string{"--harvester-disk-info: disks[0]: size 99999999999 GiB is too large", "8589934591"}},
		{"cpu", map[string]any{config.FlagCPUCount: 1 << 40}, []string{"--harvester-cpu-count:", "largest valid value is 4294967295"}},
		{"wait timeout", map[string]any{config.FlagWaitTimeout: 1 << 62}, []string{"--harvester-wait-timeout:", "largest valid value is 9223372036"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validateErr(t, tc.values)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// The largest valid values still build a VM.
	c := config.Config{VMNamespace: "default", CPUCount: 1, MemoryGiB: config.MaxMemoryGiB, ReservedMemoryMiB: -1,
		ImageName: "default/img", DiskSizeGiB: config.MaxDiskGiB, NetworkName: "default/vlan1"}
	p, err := plans.Of(t, c, "m", map[string]vmspec.ImageFacts{"default/img": {StorageClassName: "sc"}})
	if err != nil {
		t.Fatal(err)
	}
	vm, err := vmspec.BuildVM(p)
	if err != nil {
		t.Fatal(err)
	}
	mem := vm.Spec.Template.Spec.Domain.Resources.Limits.Memory()
	if got, want := mem.Value(), int64(config.MaxMemoryGiB)<<30; got != want {
		t.Errorf("memory quantity %d bytes, want %d", got, want)
	}
}

// User data that would make the cloud-init Secret larger than Kubernetes
// allows is rejected at validation, naming the flag and the limit.
func TestUserDataOverSecretLimit(t *testing.T) {
	big := "#cloud-config\nwrite_files:\n- path: /big\n  content: " + strings.Repeat("a", config.MaxSecretBytes) + "\n"
	err := validateErr(t, map[string]any{config.FlagUserData: big})
	if err == nil || !strings.Contains(err.Error(), "--harvester-user-data: the machine's cloud-init Secret would hold") ||
		!strings.Contains(err.Error(), "1048576 bytes") {
		t.Fatalf("want the Secret limit error naming --harvester-user-data, got %v", err)
	}
	nd := "version: 1\nconfig:\n- type: physical\n  name: " + strings.Repeat("e", config.MaxSecretBytes) + "\n"
	if err := validateErr(t, map[string]any{config.FlagNetworkData: nd}); err == nil || !strings.Contains(err.Error(), "--harvester-network-data: the machine's cloud-init Secret") {
		t.Fatalf("want the Secret limit error naming --harvester-network-data, got %v", err)
	}
	// Half the limit is fine.
	ok := "#cloud-config\nwrite_files:\n- path: /big\n  content: " + strings.Repeat("a", config.MaxSecretBytes/2) + "\n"
	if err := validateErr(t, map[string]any{config.FlagUserData: ok}); err != nil {
		t.Fatalf("half a MiB rejected: %v", err)
	}
}

// Cluster names that are not label values are rejected, not converted.
func TestClusterNameMustBeLabelValue(t *testing.T) {
	for _, bad := range []string{"ünï", "a b", strings.Repeat("c", 64), "-x", "a\nb"} {
		err := validateErr(t, map[string]any{config.FlagClusterName: bad})
		if err == nil || !strings.Contains(err.Error(), "--harvester-cluster-name:") || !strings.Contains(err.Error(), "not a valid label value") {
			t.Errorf("cluster name %q: got %v", bad, err)
		}
	}
	for _, ok := range []string{"c1", "Guest_A.1", "c-m-7x2kq"} {
		if err := validateErr(t, map[string]any{config.FlagClusterName: ok}); err != nil {
			t.Errorf("cluster name %q rejected: %v", ok, err)
		}
	}
}

// SSH key files are checked when the flags are read, before any API call.
func TestSSHKeyFilesCheckedAtValidation(t *testing.T) {
	dir := t.TempDir()
	withPub, _ := drivertest.WriteKey(t, dir, "good", true)
	noPub, _ := drivertest.WriteKey(t, dir, "nopub", false)
	_, otherPub := drivertest.WriteKey(t, dir, "other", true)
	mismatch, _ := drivertest.WriteKey(t, dir, "mismatch", false)
	if err := os.WriteFile(mismatch+".pub", []byte(otherPub), 0o644); err != nil {
		t.Fatal(err)
	}
	notKey := filepath.Join(dir, "notkey")
	if err := os.WriteFile(notKey, []byte("secret-looking-garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"missing pub", map[string]any{config.FlagSSHPrivateKeyPath: noPub}, "--harvester-ssh-private-key-path: the public key " + noPub + ".pub is needed"},
		{"pub of another key", map[string]any{config.FlagSSHPrivateKeyPath: mismatch}, "is not the public key of the private key"},
		{"not a private key", map[string]any{config.FlagSSHPrivateKeyPath: notKey}, "is not an SSH private key"},
		{"missing private key", map[string]any{config.FlagSSHPrivateKeyPath: filepath.Join(dir, "none")}, "cannot read the private key"},
	}
	for _, tc := range cases {
		err := validateErr(t, tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", tc.name, tc.want, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret-looking-garbage") {
			t.Errorf("%s: the key file's content is in the error", tc.name)
		}
	}
	if err := validateErr(t, map[string]any{config.FlagSSHPrivateKeyPath: withPub}); err != nil {
		t.Errorf("matching key and .pub rejected: %v", err)
	}
	// With a key pair no .pub is needed (the key pair's public key is used).
	if err := validateErr(t, map[string]any{config.FlagSSHPrivateKeyPath: noPub, config.FlagKeyPairName: "default/k"}); err != nil {
		t.Errorf("key pair with a private key and no .pub rejected: %v", err)
	}
}

func TestNetworkDataV2Structure(t *testing.T) {
	valid := []string{
		"version: 2\nethernets:\n  eth0:\n    match: {macaddress: '52:54:00:12:34:56'}\n    set-name: eth0\n    dhcp4: yes\n    addresses: [10.0.0.5/24]\n    gateway4: 10.0.0.1\n    nameservers: {addresses: [1.1.1.1]}\n    routes: [{to: 0.0.0.0/0, via: 10.0.0.1}]\n    mtu: 1500\n",
		"version: 2\nbonds:\n  bond0:\n    interfaces: [eth0, eth1]\n    parameters: {mode: active-backup}\nvlans:\n  vlan10:\n    id: 10\n    link: bond0\n",
		"network:\n  version: 2\n  bridges:\n    br0: {interfaces: [eth0], dhcp4: true}\n",
		"version: 2\nrenderer: networkd\nethernets:\n  eth0:\n    addresses:\n    - 10.0.0.5/24: {lifetime: 0}\n",
	}
	for _, nd := range valid {
		if err := config.ValidateNetworkData(nd); err != nil {
			t.Errorf("valid v2 %q rejected: %v", nd, err)
		}
	}
	invalid := []struct{ nd, want string }{
		{"version: 2\nethernets: [eth0]\n", "ethernets: must be a mapping of device IDs"},
		{"version: 2\nethernets:\n  eth0: dhcp\n", "ethernets.eth0: must be a mapping of settings"},
		{"version: 2\nethernets:\n  eth0:\n    dhcp4: maybe\n", "ethernets.eth0.dhcp4: must be a boolean"},
		{"version: 2\nethernets:\n  eth0:\n    mtu: big\n", "ethernets.eth0.mtu: must be an integer"},
		{"version: 2\nethernets:\n  eth0:\n    addresses: 10.0.0.5/24\n", "ethernets.eth0.addresses: must be a list of addresses"},
		{"version: 2\nbonds:\n  bond0:\n    interfaces: eth0\n", "bonds.bond0.interfaces: must be a list of strings"},
		{"version: 2\nvlans:\n  v:\n    link: eth0\n", `vlans.v: a VLAN needs "id"`},
		{"version: 2\nvlans:\n  v: {id: 5000, link: eth0}\n", "vlans.v.id: must be a VLAN ID 0-4094"},
		{"network:\n  version: 2\n  ethernet: {}\n", "network.ethernet: unknown key"},
		{"version: 1\nconfig:\n- physical\n", "config[0]: must be a mapping with a type"},
	}
	for _, tc := range invalid {
		err := validateErr(t, map[string]any{config.FlagNetworkData: tc.nd})
		if err == nil || !strings.Contains(err.Error(), "--harvester-network-data: "+tc.want) {
			t.Errorf("%q: want %q, got %v", tc.nd, tc.want, err)
		}
	}
}

// A kubeconfig content whose user runs a program or reads a token file of
// the host running the driver (Rancher's) is rejected before any call.
func TestKubeconfigContentPluginsRejected(t *testing.T) {
	for _, user := range []string{
		"exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, id]",
		"tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
		"auth-provider:\n      name: oidc\n      config: {idp-issuer-url: https://x}",
	} {
		kc := strings.Replace(drivertest.Kubeconfig, "token: secret-token", user, 1)
		err := validateErr(t, map[string]any{config.FlagKubeconfigContent: kc})
		if err == nil || !strings.Contains(err.Error(), `--harvester-kubeconfig-content: user "u" may not use exec or auth-provider plugins or a tokenFile`) {
			t.Errorf("user %q: got %v", user, err)
		}
	}
}

// MIME user data (plain or base64) reaches cloud-init as its parts; a part
// of an unknown type is rejected naming the flag and the part.
func TestMIMEUserData(t *testing.T) {
	mime := "Content-Type: multipart/mixed; boundary=B\nMIME-Version: 1.0\n\n--B\nContent-Type: text/cloud-config\n\nruncmd: [echo a]\n" +
		"--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho b\n--B--\n"
	for _, v := range []string{mime, b64(mime)} {
		d := New()
		d.MachineName = "c1-pool1-abcde"
		if err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagUserData: v}))); err != nil {
			t.Fatalf("MIME user data rejected: %v", err)
		}
		if d.UserData != mime {
			t.Errorf("user data not decoded: %q", d.UserData)
		}
	}
	bad := strings.Replace(mime, "text/x-shellscript", "text/html", 1)
	if err := validateErr(t, map[string]any{config.FlagUserData: bad}); err == nil ||
		!strings.Contains(err.Error(), "--harvester-user-data: user data: part 2: content type text/html is not supported") {
		t.Errorf("got %v", err)
	}
}
