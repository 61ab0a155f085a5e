package driver_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// machineField is one field of a Rancher machine config (HarvesterConfig),
// in the order the user set them.
type machineField struct {
	flag  string // without the leading --
	value any    // string, bool or a number
}

// rancherJob is what Rancher's machine-provision job runs for one machine
// pool: credentials only in HARVESTER_* environment variables, the machine
// config as flags.
type rancherJob struct {
	r        *rm
	fields   []machineField
	env      []string
	hostname map[string]string // instance -> --hostname-override
}

// newRancherJob sets the cloud credential as Rancher does: kubeconfig,
// cluster ID and type in the environment, nothing on the command line.
func newRancherJob(r *rm, fields ...machineField) *rancherJob {
	return &rancherJob{r: r, fields: fields, hostname: map[string]string{},
		env: []string{"HARVESTER_CLUSTER_ID=c-e2e42", "HARVESTER_CLUSTER_TYPE=harvester"}}
}

// createArgs are the arguments of `rancher-machine create` as Rancher's
// machine-provision job builds them: --hostname-override only when the
// hostname differs, fields in the user's order, booleans bare and only when
// true, empty strings left out, numbers with %v, --harvester-cluster-name
// last, then the instance name.
func (j *rancherJob) createArgs(instance string) []string {
	args := []string{"create", "--driver=harvester", "--custom-install-script=" + j.r.script}
	if h := j.hostname[instance]; h != "" && h != instance {
		args = append(args, "--hostname-override="+h)
	}
	for _, f := range j.fields {
		switch v := f.value.(type) {
		case bool:
			if v {
				args = append(args, "--"+f.flag)
			}
		case string:
			if v != "" {
				args = append(args, "--"+f.flag+"="+v)
			}
		default:
			args = append(args, fmt.Sprintf("--%s=%v", f.flag, v))
		}
	}
	return append(args, "--harvester-cluster-name="+j.r.cluster, instance)
}

// remove runs Rancher's delete job: no driver flag, only the environment.
func (j *rancherJob) remove(updateConfig bool, instance string, extraEnv ...string) (string, error) {
	args := []string{"rm", "-y"}
	if updateConfig {
		args = append(args, "--update-config")
	}
	return j.r.runEnv(append(append([]string{}, j.env...), extraEnv...), append(args, instance)...)
}

// rancherInstanceName is the machine name Rancher gives rancher-machine:
// dots turned into dashes; longer than 63 characters, the end replaced by
// "-" and the first 5 hex digits of the name's SHA-256.
func rancherInstanceName(machine string) string {
	n := strings.ReplaceAll(machine, ".", "-")
	if len(n) <= 63 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:57] + "-" + hex.EncodeToString(sum[:])[:5]
}

func TestRancherInstanceName(t *testing.T) {
	t.Parallel()
	if got := rancherInstanceName("c1-pool.a-x7k2p"); got != "c1-pool-a-x7k2p" {
		t.Errorf("dots: got %s", got)
	}
	long := "cluster-with-a-long-name-" + strings.Repeat("pool", 10) + "-x7k2p"
	got := rancherInstanceName(long)
	if len(got) != 63 || !strings.HasPrefix(got, long[:57]+"-") || got == long[:63] {
		t.Errorf("long: got %s (%d characters)", got, len(got))
	}
	if rancherInstanceName(long+"q") == got {
		t.Error("two long names that differ only at the end got the same instance name")
	}
}

// createPool creates the pool's machines at once, as Rancher's jobs do.
func (j *rancherJob) createPool(t *testing.T, names []string) {
	t.Helper()
	outs := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = j.r.runEnv(j.env, j.createArgs(n)...)
		}()
	}
	wg.Wait()
	t.Cleanup(func() { _, _ = j.r.run(append([]string{"rm", "-y", "-f"}, names...)...) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %s: %v\n%s", names[i], err, outs[i])
		}
		if strings.Contains(outs[i], "Closing plugin") {
			t.Errorf("create %s shows the plugin library's debug line:\n%s", names[i], outs[i])
		}
		if want := "(" + names[i] + ") " + names[i] + ": creating VM"; !strings.Contains(outs[i], want) {
			t.Errorf("create %s does not show the driver's progress line %q:\n%s", names[i], want, outs[i])
		}
	}
}

// TestRancherProvisioningFlow runs a 3-machine pool through rancher-machine
// exactly as Rancher does, then deletes it as Rancher's delete job does
// after the kubeconfig token was rotated.
func TestRancherProvisioningFlow(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-rancher")
	j := newRancherJob(r,
		machineField{"harvester-image-name", "default/ubuntu-22.04"},
		machineField{"harvester-cpu-count", 2},
		machineField{"harvester-memory-size", 4},
		machineField{"harvester-disk-size", 20},
		machineField{"harvester-enable-efi", false},
		machineField{"harvester-network-name", "default/vlan1"},
		machineField{"harvester-network-model", "virtio"},
		machineField{"harvester-user-data", ""},
		machineField{"harvester-ssh-user", "ubuntu"},
		machineField{"harvester-cpu-pinning", false},
		machineField{"harvester-vm-namespace", "default"},
		machineField{"harvester-wait-timeout", 120},
	)
	names := make([]string, 3)
	for i := range names {
		names[i] = rancherInstanceName(fmt.Sprintf("%s-pool.1-%05d", r.cluster, 7*i+3))
	}
	j.hostname[names[2]] = "node-three"
	j.createPool(t, names)

	hosts := map[string]string{}
	for _, n := range names {
		// Harvester's VMI controller copies the host's topology labels onto
		// the VMI on its own reconcile once the VMI is scheduled
		// (pkg/controller/master/virtualmachine/vmi_controller.go), not
		// before the driver returns: wait for the hostname's.
		waitObject(t, vmiKind(), n, func(v *kubevirtv1.VirtualMachineInstance) bool {
			return v != nil && v.Status.NodeName != "" && v.Annotations[harvester.HostnameKey] == v.Status.NodeName
		})
		vmi := getVMI(t, n)
		if vmi == nil {
			t.Fatalf("%s: no VMI", n)
		}
		if prev, dup := hosts[vmi.Status.NodeName]; dup {
			t.Errorf("%s and %s share host %s: the pool is not spread", prev, n, vmi.Status.NodeName)
		}
		hosts[vmi.Status.NodeName] = n
		for _, k := range []string{harvester.ZoneKey, harvester.RegionKey, harvester.HostnameKey} {
			if vmi.Annotations[k] == "" {
				t.Errorf("%s: VMI has no topology annotation %s: %v", n, k, vmi.Annotations)
			}
		}
		ci := readNodeCloudInit(t, n)
		checkInstallScriptLast(t, ci)
		if want := map[bool]string{true: "node-three", false: n}[n == names[2]]; ci.Hostname != want {
			t.Errorf("%s: cloud-init hostname %q, want %q", n, ci.Hostname, want)
		}
		checkOneLineAnswers(t, r, n)
	}

	// The token was rotated since create: the stored credential is stale,
	// the environment holds the new one.
	stale := rejectedKubeconfig(t)
	for _, n := range names {
		setStoredKubeconfig(t, r, n, stale)
	}
	start := time.Now()
	out, err := j.remove(true, names[2], "HARVESTER_KUBECONFIG_CONTENT=")
	if err == nil {
		t.Errorf("rm with only the stale stored credential succeeded:\n%s", out)
	}
	if !strings.Contains(out, kubeapi.ErrCredentialsRejected.Error()) || !strings.Contains(out, "Create a new kubeconfig") {
		t.Errorf("rm with a stale credential does not say it was rejected and how to renew it:\n%s", out)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("rm with a stale credential took %s to fail", d)
	}
	if out, err := j.remove(true, names[0]); err != nil {
		t.Errorf("rm --update-config (Rancher's delete job) with the rotated credential in the environment: %v\n%s", err, out)
	}
	if out, err := j.remove(false, names[1]); err != nil {
		t.Errorf("rm without --update-config (older Rancher) with the rotated credential in the environment: %v\n%s", err, out)
	}
	if out, err := j.remove(true, names[2]); err != nil {
		t.Errorf("rm --update-config after a failed attempt: %v\n%s", err, out)
	}
}

// checkOneLineAnswers: `ip`, `url` and `status` print exactly one line on
// stdout, every time (the plugin library's "Closing plugin on server side"
// line used to follow now and then).
func checkOneLineAnswers(t *testing.T, r *rm, name string) {
	t.Helper()
	for range 5 {
		for _, cmd := range []string{"ip", "url", "status"} {
			out, errOut, err := r.stdoutStderr(cmd, name)
			if err != nil {
				t.Fatalf("rancher-machine %s %s: %v\n%s%s", cmd, name, err, out, errOut)
			}
			if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 1 || lines[0] == "" {
				t.Errorf("rancher-machine %s %s: stdout is not one line: %q", cmd, name, out)
			}
		}
	}
}
