package driver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rancher/machine/libmachine/drivers"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/internal/field"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func validValues() map[string]any {
	return map[string]any{
		config.FlagKubeconfigContent: drivertest.Kubeconfig,
		config.FlagImageName:         "default/ubuntu-22.04",
		config.FlagNetworkName:       "default/vlan1",
		config.FlagSSHUser:           "ubuntu",
	}
}

func withValues(extra map[string]any) map[string]any {
	v := validValues()
	for k, x := range extra {
		v[k] = x
	}
	return v
}

func TestSetConfigFromFlagsValid(t *testing.T) {
	d := New()
	d.MachineName = "c1-pool1-abcde"
	if err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{
		config.FlagKubeconfigContent: b64(drivertest.Kubeconfig),
		config.FlagDiskInfo:          b64(`{"disks":[{"imageName":"default/ubuntu-22.04","size":20,"bootOrder":1}]}`),
		config.FlagUserData:          b64("#cloud-config\npackages: [htop]\n"),
		config.FlagNetworkData:       "version: 2\nethernets:\n  enp1s0:\n    dhcp4: true\n",
		config.FlagVMAffinity:        b64(`{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["sim-zone-a"]}]}]}}}`),
	}))); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if d.KubeconfigContent != drivertest.Kubeconfig {
		t.Errorf("base64 kubeconfig not decoded")
	}
	if !strings.HasPrefix(d.UserData, "#cloud-config") || !strings.HasPrefix(d.DiskInfo, "{") || !strings.HasPrefix(d.VMAffinity, "{") {
		t.Errorf("base64 values not decoded: %q %q %q", d.UserData, d.DiskInfo, d.VMAffinity)
	}
	if d.SSHUser != "ubuntu" || d.SSHPort != 22 || d.VMNamespace != "default" || d.CPUCount != 2 || d.MemoryGiB != 4 {
		t.Errorf("defaults/values not read: %+v %+v", d.BaseDriver, d.Config)
	}
}

func TestValidateErrors(t *testing.T) {
	cases := []struct {
		name   string
		values map[string]any
		mname  string
		want   []string
	}{
		{"no kubeconfig", map[string]any{config.FlagKubeconfigContent: ""}, "m", []string{"--harvester-kubeconfig-content: is required"}},
		{"bad kubeconfig", map[string]any{config.FlagKubeconfigContent: "clusters: 5"}, "m", []string{"--harvester-kubeconfig-content: is not a usable kubeconfig"}},
		{"machine name", nil, "Bad_Name", []string{`machine name "Bad_Name" cannot be a VM name`}},
		{"long machine name", nil, strings.Repeat("a", 64), []string{"cannot be a VM name", "63"}},
		{"namespace", map[string]any{config.FlagVMNamespace: "Not OK"}, "m", []string{"--harvester-vm-namespace:"}},
		{"vm labels", map[string]any{config.FlagVMLabels: "kubevirt.io/x=y,app"}, "m", []string{`--harvester-vm-labels: "kubevirt.io/x=y": key "kubevirt.io/x" is reserved`, `--harvester-vm-labels: "app": is not key=value`}},
		{"cpu", map[string]any{config.FlagCPUCount: 0}, "m", []string{"--harvester-cpu-count: must be at least 1"}},
		{"memory", map[string]any{config.FlagMemorySize: 0}, "m", []string{"--harvester-memory-size: must be at least 1"}},
		{"reserved negative", map[string]any{config.FlagReservedMemorySize: -5}, "m", []string{"--harvester-reserved-memory-size: must be -1"}},
		{"reserved too big", map[string]any{config.FlagReservedMemorySize: 4096}, "m", []string{"--harvester-reserved-memory-size: 4096 MiB must be less than"}},
		{"disk size", map[string]any{config.FlagDiskSize: -1}, "m", []string{"--harvester-disk-size: must be 0"}},
		{"disk bus", map[string]any{config.FlagDiskBus: "ide"}, "m", []string{"--harvester-disk-bus:", "virtio, sata, scsi"}},
		{"nic model", map[string]any{config.FlagNetworkModel: "foo"}, "m", []string{"--harvester-network-model:", "e1000"}},
		{"ssh port", map[string]any{config.FlagSSHPort: 70000}, "m", []string{"--harvester-ssh-port: must be a port"}},
		{"ssh user", map[string]any{config.FlagSSHUser: ""}, "m", []string{"--harvester-ssh-user: must not be empty"}},
		{"wait timeout", map[string]any{config.FlagWaitTimeout: 0}, "m", []string{"--harvester-wait-timeout: must be at least 1"}},
		{"no disk", map[string]any{config.FlagImageName: ""}, "m", []string{"--harvester-image-name: no disk"}},
		{"image name", map[string]any{config.FlagImageName: "a/b/c"}, "m", []string{"--harvester-image-name:", "<namespace>/<name>"}},
		{"disk-info json", map[string]any{config.FlagDiskInfo: `{"disks":[`}, "m", []string{"--harvester-disk-info: invalid JSON"}},
		{"disk-info unknown field", map[string]any{config.FlagDiskInfo: `{"disks":[{"image":"x"}]}`}, "m", []string{"--harvester-disk-info: invalid JSON", "unknown field"}},
		{"disk-info empty", map[string]any{config.FlagDiskInfo: `{"disks":[]}`}, "m", []string{`--harvester-disk-info: "disks" is empty`}},
		{"disk-info entries", map[string]any{config.FlagDiskInfo: `{"disks":[{"size":1},{"storageClassName":"sc","bus":"ide","type":"floppy","bootOrder":1},{"imageName":"img","bootOrder":1}]}`}, "m",
			[]string{"disks[0]: needs imageName or storageClassName", "disks[1]: size must be a positive", "disks[1]: bus \"ide\"", "disks[1]: type \"floppy\"", "disks[2]: bootOrder 1 is already used by disks[1]"}},
		{"no network", map[string]any{config.FlagNetworkName: ""}, "m", []string{"--harvester-network-name: no network"}},
		{"network-info json", map[string]any{config.FlagNetworkInfo: `[1]`}, "m", []string{"--harvester-network-info: invalid JSON"}},
		{"network-info entries", map[string]any{config.FlagNetworkInfo: `{"interfaces":[{"macAddress":"zz"},{"networkName":"default/vlan1","model":"x","type":"sriov"}]}`}, "m",
			[]string{"interfaces[0]: needs networkName", "interfaces[0]: macAddress \"zz\"", "interfaces[1]: model \"x\"", "interfaces[1]: type \"sriov\""}},
		{"vgpu json", map[string]any{config.FlagVGPUInfo: `{"vGPURequests":[{"name":"a"}]}`}, "m", []string{"--harvester-vgpu-info: vGPURequests[0]: needs both name and deviceName"}},
		{"vgpu names", map[string]any{config.FlagVGPUInfo: `{"vGPURequests":[{"name":"gpu1","deviceName":"nvidia.com/A2-1Q"},{"name":"gpu1","deviceName":"nvidia.com/A2-1Q"},{"name":"gpu 2","deviceName":"nvidia.com/A2-1Q"}]}`}, "m",
			[]string{`--harvester-vgpu-info: vGPURequests[1]: name "gpu1" is already the name of vGPURequests[0]; give each vGPU its own name`,
				`--harvester-vgpu-info: vGPURequests[2]: name "gpu 2" may only have letters, digits, '_' and '-'`}},
		{"vgpu bad", map[string]any{config.FlagVGPUInfo: `nope`}, "m", []string{"--harvester-vgpu-info: invalid JSON"}},
		{"affinity", map[string]any{config.FlagVMAffinity: `{"nodeAffinty":{}}`}, "m", []string{"--harvester-vm-affinity: invalid JSON", "unknown field"}},
		{"affinity not json", map[string]any{config.FlagVMAffinity: `zone=a`}, "m", []string{"--harvester-vm-affinity: invalid JSON"}},
		{"network-data v1 without config", map[string]any{config.FlagNetworkData: "version: 1\n"}, "m", []string{`--harvester-network-data: version 1 network config needs a "config" list`}},
		{"network-data version", map[string]any{config.FlagNetworkData: "version: 3\n"}, "m", []string{"--harvester-network-data: version must be 1 or 2"}},
		{"network-data not yaml", map[string]any{config.FlagNetworkData: "just text"}, "m", []string{"--harvester-network-data: must be cloud-init network config"}},
		{"user-data", map[string]any{config.FlagUserData: "#cloud-config\n- a\n"}, "m", []string{"--harvester-user-data:", "mapping"}},
		{"secure boot", map[string]any{config.FlagEnableSecureBoot: true}, "m", []string{"--harvester-enable-secure-boot: needs --harvester-enable-efi"}},
		{"emulator thread", map[string]any{config.FlagIsolateEmulatorThread: true}, "m", []string{"--harvester-isolate-emulator-thread: needs --harvester-cpu-pinning"}},
		{"key pair without key", map[string]any{config.FlagKeyPairName: "default/sim-key"}, "m", []string{"--harvester-key-pair-name: needs --harvester-ssh-private-key-path"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := New()
			d.MachineName = tc.mname
			err := d.SetConfigFromFlags(optsWith(withValues(tc.values)))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestValidateReportsEverythingAtOnce(t *testing.T) {
	d := New()
	d.MachineName = "UPPER"
	err := d.SetConfigFromFlags(optsWith(map[string]any{
		config.FlagCPUCount: 0, config.FlagMemorySize: 0, config.FlagEnableSecureBoot: true, config.FlagKeyPairName: "k",
		config.FlagDiskInfo: "{", config.FlagNetworkInfo: "{",
	}))
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("want joined errors, got %v", err)
	}
	n := strings.Count(err.Error(), "\n")
	if n < 8 {
		t.Errorf("want every problem reported, got %d lines:\n%v", n, err)
	}
}

func TestCloudConfigFileRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cc")
	if err := os.WriteFile(path, []byte("#cloud-config\nhostname: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := New()
	d.MachineName = "m"
	if err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagCloudConfig: path}))); err != nil {
		t.Fatal(err)
	}
	if d.CloudConfig != "#cloud-config\nhostname: x\n" {
		t.Errorf("cloud-config file not read: %q", d.CloudConfig)
	}
	d2 := New()
	d2.MachineName = "m"
	err := d2.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagCloudConfig: filepath.Join(dir, "missing")})))
	if err == nil || !strings.Contains(err.Error(), "--harvester-cloud-config: cannot read") {
		t.Errorf("missing file: %v", err)
	}
}

func TestUnmarshalJSONRereadsCredentials(t *testing.T) {
	t.Setenv("HARVESTER_KUBECONFIG_CONTENT", b64("clusters: []\nfresh: true\n"))
	d := New()
	if err := d.UnmarshalJSON([]byte(`{"KubeconfigContent":"stale","VMNamespace":"ns1","MachineName":"m1","MachineID":"abc","VMUID":"u1"}`)); err != nil {
		t.Fatal(err)
	}
	if d.kubeconfig() != "clusters: []\nfresh: true\n" || d.VMNamespace != "ns1" || d.MachineName != "m1" || d.MachineID != "abc" || d.VMUID != "u1" {
		t.Errorf("got %q %+v %+v", d.kubeconfig(), d.Config, d.Ownership)
	}
	var _ drivers.Driver = d
}

// TestCommandCredentialsPersistedOnlyOnRequest: the environment's
// credential is used by every command but replaces the stored one only
// with --update-config, and only once it is confirmed.
func TestCommandCredentialsPersistedOnlyOnRequest(t *testing.T) {
	env := func(string) string { return "fresh-kubeconfig" }
	cases := []struct {
		args       []string
		wantStored string
	}{
		{[]string{"rancher-machine", "status", "m1"}, "stale"},
		{[]string{"rancher-machine", "ip", "m1"}, "stale"},
		{[]string{"rancher-machine", "rm", "-y", "m1"}, "stale"},
		{[]string{"rancher-machine", "rm", "-y", "--update-config", "m1"}, "fresh-kubeconfig"},
		{[]string{"rancher-machine", "status", "--update-config=true", "m1"}, "fresh-kubeconfig"},
		{[]string{"rancher-machine", "status", "--update-config=false", "m1"}, "stale"},
	}
	for _, tc := range cases {
		d := New()
		d.KubeconfigContent = "stale"
		d.useCommandCredentials(tc.args, env)
		if d.kubeconfig() != "fresh-kubeconfig" {
			t.Errorf("%v: command uses %q, want the fresh credential", tc.args, d.kubeconfig())
		}
		if d.KubeconfigContent != "stale" {
			t.Errorf("%v: stored before the credential was confirmed", tc.args)
		}
		d.confirmed()
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var stored struct{ KubeconfigContent string }
		if err := json.Unmarshal(raw, &stored); err != nil {
			t.Fatal(err)
		}
		if stored.KubeconfigContent != tc.wantStored {
			t.Errorf("%v: stored credential %q, want %q", tc.args, stored.KubeconfigContent, tc.wantStored)
		}
		if strings.Contains(string(raw), "fresh-kubeconfig") != (tc.wantStored == "fresh-kubeconfig") {
			t.Errorf("%v: persisted JSON has the session credential: %s", tc.args, raw)
		}
	}
}

func TestValidateNetworkDataForms(t *testing.T) {
	valid := []string{
		"version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - type: dhcp\n",
		"version: 2\nethernets:\n  eth0:\n    dhcp4: true\n",
		"network:\n  version: 2\n  ethernets: {}\n",
		b64("version: 1\nconfig: []\n"),
	}
	for _, nd := range valid {
		d := New()
		d.MachineName = "m"
		if err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagNetworkData: nd}))); err != nil {
			t.Errorf("network data %q rejected: %v", nd, err)
		}
	}
}

// TestValidateProblemsNameTheirFlags: each problem is an internal/field
// error whose field is the flag as the user types it.
func TestValidateProblemsNameTheirFlags(t *testing.T) {
	d := New()
	d.MachineName = "m"
	err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagDiskBus: "ide", config.FlagCPUCount: 0, config.FlagSSHPort: 70000})))
	got := field.Fields(errors.Unwrap(err))
	slices.Sort(got)
	want := []string{"--" + config.FlagCPUCount, "--" + config.FlagDiskBus, "--" + config.FlagSSHPort}
	if !slices.Equal(got, want) {
		t.Errorf("fields %q, want %q (error: %v)", got, want, err)
	}
}

// TestRefusedCredentialNotStored: `status --update-config` (or any command)
// with a credential of another cluster is refused and does not store it;
// with the machine's cluster's credential it is stored.
func TestRefusedCredentialNotStored(t *testing.T) {
	for _, c := range []struct {
		setting, want string
	}{{"another-cluster", "stale"}, {testCluster, "fresh"}} {
		d, _ := newFakeDriver(t, c.setting, nil, []runtime.Object{fakeVM(testMachineID, "uid-1"), fakeVMI(testMachineID, "uid-vmi")})
		d.KubeconfigContent, d.cmd.storeOnConfirm = "stale", "fresh"
		_, err := d.GetState()
		if (err != nil) != (c.want == "stale") {
			t.Errorf("setting %s: GetState: %v", c.setting, err)
		}
		if d.KubeconfigContent != c.want {
			t.Errorf("setting %s: stored credential %q, want %q", c.setting, d.KubeconfigContent, c.want)
		}
	}
}
