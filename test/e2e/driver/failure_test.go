package driver_test

import (
	"context"
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func waitPVCGone(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pvcs := kubeapi.KindOf[*corev1.PersistentVolumeClaimList]("PVC", &corev1.PersistentVolumeClaim{}, kube.CoreV1().PersistentVolumeClaims(namespace))
	if _, err := kubeapi.Wait(ctx, pvcs, namespace, name, 0, func(pvc *corev1.PersistentVolumeClaim) (bool, error) { return pvc == nil, nil }); err != nil {
		t.Errorf("PVC %s not deleted: %v", name, err)
	}
}

// simFault runs `harvester-sim fault ARGS...`, which returns once the fault
// is in effect (sim/fault).
func simFault(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "harvester-sim"), append([]string{"fault", "--state-dir", sim.Dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("harvester-sim fault %v: %v\n%s", args, err, out)
	}
}

// TestPreCreateReportsEveryProblem: missing image, network and key pair are
// reported together, and nothing is created.
func TestPreCreateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-pre")
	key := filepath.Join(sim.Dir, "sim-key") // a private key: the flags are valid, the objects are missing
	out, err := r.create("e2e-pre-pool1-p0000", "--harvester-image-name=default/no-such-image",
		"--harvester-network-name=default/no-such-net", "--harvester-key-pair-name=no-such-key", "--harvester-ssh-private-key-path="+key)
	if err == nil {
		t.Fatalf("create succeeded:\n%s", out)
	}
	for _, want := range []string{"image default/no-such-image does not exist", "network default/no-such-net does not exist", "key pair default/no-such-key does not exist"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestInvalidFlagsReportedTogether: validation errors name every flag.
func TestInvalidFlagsReportedTogether(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-bad")
	out, err := r.create("e2e-bad-pool1-b0000", "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-enable-secure-boot", "--harvester-disk-info={", "--harvester-vm-affinity=nope", "--harvester-cpu-count=0")
	if err == nil {
		t.Fatalf("create succeeded:\n%s", out)
	}
	for _, want := range []string{"--harvester-enable-secure-boot", "--harvester-disk-info", "--harvester-vm-affinity", "--harvester-cpu-count"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestCreateRollsBackWhenVMCreateFails: the Secret created before the VM is
// removed again when the API refuses the VM.
//
// Sequential: fault reject-create refuses every test's VM creates (and
// clear ends every fault).
func TestCreateRollsBackWhenVMCreateFails(t *testing.T) {
	simFault(t, fault.RejectCreate, "virtualmachines.kubevirt.io")
	t.Cleanup(func() { simFault(t, fault.ClearAll) })
	r := newRM(t, "e2e-rollback")
	out, err := r.create("e2e-rollback-pool1-r0000", "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")
	if err == nil {
		t.Fatalf("create succeeded despite the fault:\n%s", out)
	}
	// The Secret existed when the VM was refused; the error names the
	// admission rejection; newRM's cleanup checks no Secret, VM or PVC is left.
	for _, want := range []string{"creating cloud-init Secret", "create VM", "harvester-sim fault: creates of virtualmachines.kubevirt.io are rejected", "removing what it created"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestTimeoutSaysWhatWasSeen: a VMI stuck in Scheduling makes create time
// out with the last phase in the error, and roll back. The wait outlasts
// the binding of the VM's disk on a loaded machine (Harvester's VM
// controller makes the claim; at 10 s the scheduler had only seen it
// unbound).
//
// Sequential: fault stuck-scheduling rewrites the admission policy every
// launcher Pod's binding passes.
func TestTimeoutSaysWhatWasSeen(t *testing.T) {
	name := "e2e-stuck-pool1-s0000"
	simFault(t, fault.StuckScheduling, namespace+"/e2e-stuck-*")
	t.Cleanup(func() { simFault(t, fault.StuckScheduling, "--remove", namespace+"/e2e-stuck-*") })
	r := newRM(t, "e2e-stuck")
	out, err := r.create(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1", "--harvester-wait-timeout=25")
	if err == nil {
		t.Fatalf("create succeeded:\n%s", out)
	}
	// The cause: the phase, the condition and the scheduler's event.
	for _, want := range []string{"timed out after 25s", "last seen: phase Scheduling", "conditions: PodScheduled=False", "held in Scheduling by the simulator fault", "FailedScheduling"} {
		if !strings.Contains(out, want) {
			t.Errorf("timeout error lacks %q:\n%s", want, out)
		}
	}
	r.mustRun("rm", "-y", "--update-config", name)
}

// TestNoIPHintsAtGuestAgent: without the agent no address appears, and the
// error says why. The wait is long enough for the VM to run on a loaded
// machine (10 s once ended it still Pending), with the package's other
// parallel tests beside it: the hint is about a VM that runs.
func TestNoIPHintsAtGuestAgent(t *testing.T) {
	t.Parallel()
	name := "e2e-noagent-pool1-n0000"
	r := newRM(t, "e2e-noagent")
	out, err := r.create(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-skip-qemu-guest-agent", "--harvester-wait-timeout=60")
	if err == nil {
		t.Fatalf("create succeeded without a guest agent:\n%s", out)
	}
	if !strings.Contains(out, "qemu-guest-agent") || !strings.Contains(out, "no IP") {
		t.Errorf("error lacks the guest-agent hint:\n%s", out)
	}
}

// TestRejectedTokenSaysExpired: a kubeconfig with a bad token yields one
// clear error; rm --update-config with fresh credentials then works.
func TestRejectedTokenSaysExpired(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-token")
	name := "e2e-token-pool1-t0000"
	r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")

	bad := rejectedKubeconfig(t)
	out, err := r.runEnv([]string{"HARVESTER_KUBECONFIG_CONTENT=" + string(bad)}, "status", name)
	if err == nil {
		t.Errorf("status with a rejected token succeeded:\n%s", out)
	}
	if !strings.Contains(out, "401") || !strings.Contains(out, "expired") || !strings.Contains(out, "5827") {
		t.Errorf("no clear expired-token error:\n%s", out)
	}
	out, err = r.runEnv([]string{"HARVESTER_KUBECONFIG_CONTENT=" + string(bad)}, "rm", "-y", "--update-config", name)
	if err == nil {
		t.Errorf("rm with a rejected token succeeded:\n%s", out)
	}

	// Credentials rotated since create: the stored kubeconfig is now bad,
	// rm --update-config must use the fresh one from the environment.
	setStoredKubeconfig(t, r, name, bad)
	r.mustRun("rm", "-y", "--update-config", name)
}
