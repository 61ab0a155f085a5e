package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"

	"github.com/harvester-kit/harvester-machine/internal/version"
)

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(append([]string{"harvester-bootstrap"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func TestArtifactToStdoutAndFile(t *testing.T) {
	out, _, code := run(t, "affinity", "--zone", "zone-a")
	if code != 0 || !strings.Contains(out, `"topology.kubernetes.io/zone"`) {
		t.Fatalf("exit %d: %s", code, out)
	}
	path := filepath.Join(t.TempDir(), "aff.json")
	stdout, stderr, code := run(t, "affinity", "--zone", "zone-a", "-o", path)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	data, _ := os.ReadFile(path)
	if string(data) != out {
		t.Error("file content differs from stdout")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("non-secret artifact mode %o", st.Mode().Perm())
	}
	if !strings.Contains(stderr, "wrote artifact") {
		t.Errorf("no log on stderr: %q", stderr)
	}
}

func TestSecretArtifactReplacesLooseFile(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc")
	if err := os.WriteFile(kc, []byte(testGuestKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "manifests.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, "manifests", "--cluster-name", "g", "--cloud-config", kc, "-o", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("credential written with mode %o over a 0644 file", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "---\napiVersion: v1\ndata:\n  cloud-config:") {
		t.Errorf("secret not first:\n%.200s", data)
	}
}

// TestManifestsLoadBalancing: kube-vip comes with the cloud provider and
// the load-balancing flags reach it and the CCM, values unquoted.
func TestManifestsLoadBalancing(t *testing.T) {
	out, stderr, code := run(t, "manifests", "--cluster-name", "g", "--csi=false", "--vip-interface", "enp2s0",
		"--external-traffic-policy-local", "--management-network", "default/vlan1", "--node-ip-cidr", "10.52.0.0/16",
		"--node-exclude-ip-ranges", "10.52.0.1", "--node-exclude-ip-ranges", "10.52.1.0/24", "--image-registry", "mirror.example.com")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"kind: DaemonSet\nmetadata:\n  labels:", "name: kube-vip\n", "image: mirror.example.com/rancher/mirrored-kube-vip-kube-vip-iptables:v1.2.3",
		"- name: vip_interface\n              value: enp2s0", "- name: svc_election\n              value: \"true\"",
		"- --management-network=default/vlan1\n", "- --node-ip-cidr=10.52.0.0/16\n", "- --node-exclude-ip-ranges=10.52.0.1,10.52.1.0/24\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("manifests lack %q", want)
		}
	}
	out, _, code = run(t, "manifests", "--cluster-name", "g", "--kube-vip=false")
	if code != 0 || strings.Contains(out, "kube-vip") {
		t.Errorf("--kube-vip=false: exit %d, kube-vip in the output: %v", code, strings.Contains(out, "kube-vip"))
	}
}

func TestEnvironmentVariables(t *testing.T) {
	t.Setenv("HARVESTER_BOOTSTRAP_ZONE", "zone-env")
	t.Setenv("HARVESTER_BOOTSTRAP_FORMAT", "json")
	out, _, code := run(t, "affinity")
	if code != 0 || !strings.Contains(out, "zone-env") {
		t.Fatalf("exit %d: %s", code, out)
	}
	t.Setenv("HARVESTER_BOOTSTRAP_CLUSTER_NAME", "from-env")
	out, _, code = run(t, "manifests")
	if code != 0 || !strings.Contains(out, "--cluster-name=from-env") {
		t.Fatalf("exit %d", code)
	}
}

func TestErrorsExitNonZeroNamingTheFlag(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"affinity", "--zone", "bad zone"}, `--zone "bad zone": not a valid label value`},
		{[]string{"affinity"}, "nothing to do: give at least one of --zone, --region, --pool, --machine-name"},
		{[]string{"affinity", "--pool", "pool1"}, "--cluster-name: required with --pool"},
		{[]string{"affinity", "--zone", "a", "--required"}, "--required: needs the pool to spread: --pool, --machine-name"},
		{[]string{"affinity", "--pool", "p", "--cluster-name", "c", "--machine-name", "c-p-x"}, "--pool: give it or --machine-name"},
		{[]string{"manifests"}, "--cluster-name: required"},
		{[]string{"manifests", "--cluster-name", "g", "--image-registry", "https://x/"}, `--image-registry "https://x/"`},
		{[]string{"kubeconfig", "--cluster-name", "A_B"}, `--cluster-name "A_B": must be a DNS-1123 label`},
		{[]string{"kubeconfig", "--cluster-name", "a"}, "--namespace: required"},
		{[]string{"lb", "check"}, "--service FILE"},
		{[]string{"lb", "check", "--annotation", "cloudprovider.harvesterhci.io/ipam=x"}, `ipam "x"`},
		{[]string{"lb", "pool", "--name", "p", "--range", "10.0.0.1-10.0.0.2"}, `--range "10.0.0.1-10.0.0.2": an IPPool range needs its subnet`},
		{[]string{"lb", "pool", "--range", "x"}, `--range "x": "x" is not a CIDR`},
		{[]string{"lb", "pool", "--format", "x", "--range", "10.0.0.0/24"}, `--format "x"`},
		{[]string{"addon", "rke2", "--format", "x"}, `--format "x"`},
		{[]string{"addon", "k3s", "--format", "bogus", "--cluster-name", "g"}, `--format "bogus"`},
		{[]string{"userdata", "--distribution", "rke9", "--cloud-config", "/dev/null"}, `--distribution "rke9"`},
		{[]string{"userdata", "--user-data", "/nonexistent"}, "--user-data"},
		{[]string{"nodedriver", "--url", "ftp://x", "/dev/null"}, `--url "ftp://x"`},
		{[]string{"nodedriver", "--url", "https://x", "--name", "Bad N", "/dev/null"}, `--name "Bad N"`},
		{[]string{"manifests", "--cluster-name", "g", "--vip-interface", "eth 0"}, `--vip-interface "eth 0": must be a network interface name`},
		{[]string{"manifests", "--cluster-name", "g", "--management-network", "vlan1"}, `--management-network "vlan1": must be a Harvester network as <namespace>/<name>`},
		{[]string{"manifests", "--cluster-name", "g", "--node-ip-cidr", "10.0.0.1"}, `--node-ip-cidr "10.0.0.1": must be a CIDR`},
		{[]string{"manifests", "--cluster-name", "g", "--node-exclude-ip-ranges", "10.0.0.1,x"}, `--node-exclude-ip-ranges "x": each entry must be an IP address or a CIDR`},
		{[]string{"manifests", "--cluster-name", "g", "--ccm-version", "v0.2.6", "--node-ip-cidr", "10.0.0.0/8"}, `--ccm-version "v0.2.6": the network options need the cloud provider v0.2.7 or newer; or leave out --management-network, --node-ip-cidr, --node-exclude-ip-ranges`},
		{[]string{"manifests", "--cluster-name", "g", "--kube-vip=false", "--external-traffic-policy-local"}, "need kube-vip, which comes with the cloud provider; enable --ccm, --kube-vip"},
		{[]string{"addon", "rke2", "--format", "cloud-init", "--cluster-name", "g", "--cloud-config", "/dev/null", "--management-network", "x"}, `--management-network "x"`},
		{[]string{"no-such-command"}, ""},
	}
	for _, c := range cases {
		assertFails(t, c.args, c.want)
	}
}

// assertFails runs args, expects a non-zero exit and want on stderr, and
// returns stderr.
func assertFails(t *testing.T, args []string, want string) string {
	t.Helper()
	_, stderr, code := run(t, args...)
	if code == 0 {
		t.Errorf("%v: exit 0", args)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("%v: stderr lacks %q: %s", args, want, stderr)
	}
	return stderr
}

func TestEveryCommandHasAnExample(t *testing.T) {
	var walk func(prefix string, cmds []*cliCommand)
	walk = func(prefix string, cmds []*cliCommand) {
		for _, c := range cmds {
			name := prefix + c.Name
			if len(c.Subcommands) > 0 && c.Action == nil {
				walk(name+" ", c.Subcommands)
				continue
			}
			if !strings.Contains(c.Description, "Example:") {
				t.Errorf("%s: --help has no example", name)
			}
			walk(name+" ", c.Subcommands)
		}
	}
	walk("", App(nil, nil).Commands)
}

func TestNodeDriverHashesTheBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "driver")
	if err := os.WriteFile(bin, []byte("driver-binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := run(t, "nodedriver", "--url", "https://example.com/d", bin)
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(out, "checksum: 04fc498b3321147b26babc88a4323c6162d23c2a5e3679c56bda6c3abbb1e79e") {
		t.Errorf("checksum missing:\n%s", out)
	}
}

func TestUserdataWithoutCredentials(t *testing.T) {
	key := filepath.Join(t.TempDir(), "k.pub")
	if err := os.WriteFile(key, []byte("ssh-ed25519 AAAA me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := run(t, "userdata", "--ssh-user", "ubuntu", "--ssh-public-key", key)
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.HasPrefix(out, "#cloud-config\n") || !strings.Contains(out, "ssh-ed25519 AAAA me") || !strings.Contains(out, "qemu-guest-agent") {
		t.Errorf("user data:\n%s", out)
	}
}

type cliCommand = ucli.Command

// The spread rule selects the label value the driver gives the pool's VMs.
func TestAffinityDerivesTheDriversLabel(t *testing.T) {
	out, stderr, code := run(t, "affinity", "--cluster-name", "guest-a", "--pool", "pool1")
	if code != 0 || !strings.Contains(out, `"harvesterhci.io/machineSetName": "default-guest-a-pool1"`) {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	byMachine, _, _ := run(t, "affinity", "--machine-name", "guest-a-pool1-x7k2p")
	if byMachine != out {
		t.Errorf("--machine-name gives another rule:\n%s\nthan --cluster-name/--pool:\n%s", byMachine, out)
	}
}

func TestVersionFlagPrintsTheStampedVersion(t *testing.T) {
	old := version.Version
	version.Version = "v9.8.7-test"
	t.Cleanup(func() { version.Version = old })
	out, stderr, code := run(t, "--version")
	if code != 0 || strings.TrimSpace(out) != "harvester-bootstrap version v9.8.7-test" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
