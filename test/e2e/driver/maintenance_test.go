package driver_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// checkResult is maintenance-check's -o json, decoded by hand.
type checkResult struct {
	Failed bool     `json:"failed"`
	Hosts  []string `json:"hosts"`
	VMs    []struct {
		Step       int      `json:"step"`
		Host       string   `json:"host"`
		VM         string   `json:"vm"`
		Strategy   string   `json:"evictionStrategy"`
		Migratable string   `json:"liveMigratable"`
		Action     string   `json:"action"`
		Reason     string   `json:"reason"`
		Why        string   `json:"why"`
		Targets    []string `json:"targets"`
		Restored   bool     `json:"restored"`
	} `json:"vms"`
	Refused string `json:"upgradeRefused"`
	Losses  []struct {
		Group   string `json:"group"`
		Members int    `json:"members"`
		Down    int    `json:"down"`
		Certain bool   `json:"certain"`
	} `json:"losses"`
}

// maintenanceCheck runs bin/harvester-bootstrap maintenance-check.
func maintenanceCheck(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "harvester-bootstrap"), append([]string{"maintenance-check", "--kubeconfig", sim.Kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func decodeCheck(t *testing.T, out string) checkResult {
	t.Helper()
	var r checkResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("maintenance-check -o json: %v\n%s", err, out)
	}
	return r
}

// zoneAffinity is a required node affinity to one zone, written by hand.
func zoneAffinity(zone string) string {
	raw := `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[` +
		`{"key":"topology.kubernetes.io/zone","operator":"In","values":["` + zone + `"]}]}]}}}`
	return "--harvester-vm-affinity=" + base64.StdEncoding.EncodeToString([]byte(raw))
}

// TestMaintenanceCheck: machines made by rancher-machine, judged by
// Harvester v1.8's and KubeVirt v1.7's rules. The simulator has
// harvester-node-0 and -2 in sim-zone-a and harvester-node-1 alone in
// sim-zone-b. On harvester-node-1: a vGPU machine (LiveMigrateIfPossible; a
// GPU makes LiveMigratable False, HostDeviceNotLiveMigratable) and a
// machine pinned to sim-zone-b (LiveMigrate, migratable). In sim-zone-a a
// machine pinned there.
//   - maintenance of harvester-node-1: Harvester's nodedrain controller
//     refuses it without force for both (LiveMigratable False; no other
//     Ready host matches the zone: NodeSchedulingRequirementsNotMet): exit 1;
//   - with --force Harvester stops both: their one-machine pools are lost;
//   - maintenance of the zone-a machine's host: it migrates, to the other
//     zone-a host only: exit 0;
//   - the upgrade (hosts by name: none carries a role label): without the
//     restore-VM option Harvester's upgrade webhook refuses the Upgrade
//     while non-live-migratable VMs run (both machines: the vGPU one has the
//     driver's nodeSelector, the zone-b one a node affinity no other host
//     matches): exit 1;
//   - with --restore-vm its pre-drain stops both (vm-live-migrate-detector)
//     and restore-vm starts them again after harvester-node-1; their
//     one-machine pools are down meanwhile: exit 1;
//     `harvester-sim upgrade --restore-vm` shuts down and restores exactly
//     those, and the vGPU machine is Running again afterwards.
//
// Sequential: it changes a host's allocatable and puts hosts into
// maintenance and through an upgrade.
func TestMaintenanceCheck(t *testing.T) {
	const cluster = "e2e-mnt"
	const profile = "nvidia.com/GRID_A100-2B"
	setAllocatable(t, "harvester-node-1", profile, "1")
	t.Cleanup(func() { setAllocatable(t, "harvester-node-1", profile, "") })
	r := newRM(t, cluster)
	base := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1"}
	gpu, pinB, pinA := cluster+"-gpu-g0000", cluster+"-pinb-b0000", cluster+"-pina-a0000"
	r.mustCreate(gpu, append(base, `--harvester-vgpu-info={"vGPURequests":[{"name":"gpu1","deviceName":"`+profile+`"}]}`)...)
	t.Cleanup(func() { r.mustRun("rm", "-y", gpu) })
	r.mustCreate(pinB, append(base, zoneAffinity("sim-zone-b"))...)
	t.Cleanup(func() { r.mustRun("rm", "-y", pinB) })
	r.mustCreate(pinA, append(base, zoneAffinity("sim-zone-a"))...)
	t.Cleanup(func() { r.mustRun("rm", "-y", pinA) })
	for _, name := range []string{gpu, pinB} {
		if vmi := getVMI(t, name); vmi == nil || vmi.Status.NodeName != "harvester-node-1" {
			t.Fatalf("%s is not on harvester-node-1", name)
		}
	}
	hostA := getVMI(t, pinA).Status.NodeName
	otherA := map[string]string{"harvester-node-0": "harvester-node-2", "harvester-node-2": "harvester-node-0"}[hostA]
	if otherA == "" {
		t.Fatalf("%s is on %q, not in sim-zone-a", pinA, hostA)
	}
	verdicts := func(res checkResult) map[string]string {
		out := map[string]string{}
		for _, v := range res.VMs {
			out[v.VM] = v.Host + " " + v.Action + " " + v.Reason
		}
		return out
	}

	out, stderr, code := maintenanceCheck(t, "--cluster-name", cluster, "-o", "json", "harvester-node-1")
	if code != 1 {
		t.Errorf("harvester-node-1: exit %d, want 1 (Harvester refuses)\n%s", code, stderr)
	}
	res := decodeCheck(t, out)
	if !res.Failed || !slices.Equal(res.Hosts, []string{"harvester-node-1"}) || len(res.VMs) != 2 || len(res.Losses) != 0 {
		t.Fatalf("harvester-node-1: %+v", res)
	}
	for _, v := range res.VMs {
		switch v.VM {
		case gpu:
			if v.Action != "blocks" || v.Migratable != "False" || v.Reason != "HostDeviceNotLiveMigratable" || v.Strategy != "LiveMigrateIfPossible (VMI)" ||
				!strings.Contains(v.Why, "Harvester refuses maintenance mode without force: LiveMigratable False (HostDeviceNotLiveMigratable)") {
				t.Errorf("vGPU machine: %+v", v)
			}
		case pinB:
			if v.Action != "blocks" || v.Migratable != "True" || v.Strategy != "LiveMigrate (VMI)" || !strings.Contains(v.Why, "NodeSchedulingRequirementsNotMet") {
				t.Errorf("zone-b machine: %+v", v)
			}
		default:
			t.Errorf("unexpected VM %+v", v)
		}
	}

	out, _, code = maintenanceCheck(t, "--cluster-name", cluster, "-o", "json", "--force", "harvester-node-1")
	res = decodeCheck(t, out)
	got := verdicts(res)
	if code != 1 || got[gpu] != "harvester-node-1 shut down HostDeviceNotLiveMigratable" || got[pinB] != "harvester-node-1 shut down " {
		t.Errorf("forced: exit %d, %v", code, got)
	}
	var lost []string
	for _, l := range res.Losses {
		if l.Certain && l.Members == 1 && l.Down == 1 {
			lost = append(lost, l.Group)
		}
	}
	if !slices.Equal(lost, []string{"pool gpu", "pool pinb"}) {
		t.Errorf("forced: losses %+v, want pools gpu and pinb", res.Losses)
	}

	out, stderr, code = maintenanceCheck(t, "--cluster-name", cluster, "-o", "json", hostA)
	res = decodeCheck(t, out)
	if code != 0 || res.Failed || len(res.VMs) != 1 || res.VMs[0].VM != pinA || res.VMs[0].Action != "migrates" ||
		!slices.Equal(res.VMs[0].Targets, []string{otherA}) {
		t.Errorf("%s: exit %d %+v\n%s; want %s to migrate to %s only", hostA, code, res, stderr, pinA, otherA)
	}
	table, _, _ := maintenanceCheck(t, "--cluster-name", cluster, hostA)
	if !strings.Contains(table, "migrates to "+otherA) {
		t.Errorf("table:\n%s", table)
	}

	_, stderr, code = maintenanceCheck(t, "nope-1", "harvester-node-1", "nope-2")
	if code != 1 || !strings.Contains(stderr, "unknown hosts nope-1, nope-2: Harvester's hosts are harvester-node-0, harvester-node-1, harvester-node-2") {
		t.Errorf("unknown hosts: exit %d\n%s", code, stderr)
	}

	out, _, code = maintenanceCheck(t, "--cluster-name", cluster, "--upgrade", "-o", "json")
	res = decodeCheck(t, out)
	if code != 1 || !slices.Equal(res.Hosts, []string{"harvester-node-0", "harvester-node-1", "harvester-node-2"}) ||
		!strings.HasPrefix(res.Refused, "There are non-live migratable VMs that need to be shut off before initiating the upgrade: ") ||
		!strings.Contains(res.Refused, namespace+"/"+gpu) || !strings.Contains(res.Refused, namespace+"/"+pinB) {
		t.Errorf("upgrade: exit %d, hosts %v, refused %q", code, res.Hosts, res.Refused)
	}
	upgradeWithRestore(t, cluster, gpu, pinB, pinA, r)
}

// upgradeWithRestore: TestMaintenanceCheck's upgrade with the restore-VM
// option, judged by maintenance-check and then played by harvester-sim.
func upgradeWithRestore(t *testing.T, cluster, gpu, pinB, pinA string, r *rm) {
	t.Helper()
	out, stderr, code := maintenanceCheck(t, "--cluster-name", cluster, "--upgrade", "--restore-vm", "-o", "json")
	res := decodeCheck(t, out)
	var steps []string
	predicted := map[string]bool{}
	for _, v := range res.VMs {
		if v.Action != "migrates" {
			predicted[namespace+"/"+v.VM] = v.Restored
		}
		if v.VM != pinA {
			steps = append(steps, fmt.Sprintf("%s %s %s %v", v.Host, v.VM, v.Action, v.Restored))
		}
	}
	var lost []string
	for _, l := range res.Losses {
		lost = append(lost, l.Group)
	}
	if want := []string{"harvester-node-1 " + gpu + " shut down true", "harvester-node-1 " + pinB + " shut down true"}; code != 1 || res.Refused != "" ||
		!slices.Equal(steps, want) || !slices.Equal(lost, []string{"pool gpu", "pool pinb"}) {
		t.Errorf("upgrade --restore-vm: exit %d, refused %q, %v, losses %v; want %v, pools gpu and pinb down during step 2\n%s", code, res.Refused, steps, lost, want, stderr)
	}
	report, code := harvesterSim(t, "upgrade", "--timeout", "90s", "--restore-vm")
	t.Logf("harvester-sim upgrade --restore-vm:\n%s", report)
	shut := regexp.MustCompile(`(?m)^\s*shut down\s+(\S+)\s*$`).FindAllStringSubmatch(report, -1)
	restored := regexp.MustCompile(`(?m)^\s*restored\s+(\S+)\s*$`).FindAllStringSubmatch(report, -1)
	if code != 0 || len(shut) != len(predicted) || len(restored) != len(predicted) {
		t.Errorf("harvester-sim upgrade: exit %d, shut down %v, restored %v; maintenance-check predicted %v", code, shut, restored, predicted)
	}
	for _, m := range append(shut, restored...) {
		if _, ok := predicted[m[1]]; !ok || !predicted[m[1]] {
			t.Errorf("harvester-sim upgrade: %q, which maintenance-check did not predict shut down and restored (%v)", m[0], predicted)
		}
	}
	waitObject(t, vmiKind(), gpu, func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v != nil && v.Status.Phase == kubevirtv1.Running && v.Status.NodeName == "harvester-node-1"
	})
	if s := status(t, r, gpu); s != "Running" {
		t.Errorf("vGPU machine after the upgrade: status %q, want Running", s)
	}
}
