package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/harness"
)

// The simulator's hosts and zones (sim/fixtures.go): harvester-node-0 and
// -2 in sim-zone-a, harvester-node-1 alone in sim-zone-b.
var simHosts = []string{"harvester-node-0", "harvester-node-1", "harvester-node-2"}

const (
	labelZone = "topology.kubernetes.io/zone" // Kubernetes' well-known label, also Harvester's VMI annotation
)

// harvesterSim runs bin/harvester-sim COMMAND --state-dir D ARGS... against
// the package's simulator (COMMAND may be "maintenance enable") and returns
// its combined output and exit status.
func harvesterSim(t *testing.T, command string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append(append(strings.Fields(command), "--state-dir", sim.Dir), args...)
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "harvester-sim"), argv...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("harvester-sim %s: %v\n%s", command, err, out)
	}
	return string(out), 0
}

// disableAfter takes host out of maintenance mode when the test ends, so
// no host stays cordoned for the package's other tests.
func disableAfter(t *testing.T, host string) {
	t.Helper()
	t.Cleanup(func() {
		if out, code := harvesterSim(t, "maintenance disable", host); code != 0 {
			t.Errorf("maintenance disable %s: exit %d\n%s", host, code, out)
		}
	})
}

// setCordon sets a host's spec.unschedulable, as kubectl cordon/uncordon do.
func setCordon(t *testing.T, host string, on bool) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": on}})
	if _, err := kube.CoreV1().Nodes().Patch(context.Background(), host, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon %s=%v: %v", host, on, err)
	}
}

// createOnEachHost creates machine names[i] on simHosts[i]: every other
// host is cordoned while it is created, so any scheduler that honours
// spec.unschedulable (the hand-written one, kube-scheduler) places it
// there; the machines themselves carry no host affinity and may migrate
// anywhere afterwards. Each is removed when the test ends.
func createOnEachHost(t *testing.T, r *rm, names []string, extra ...string) {
	t.Helper()
	t.Cleanup(func() {
		for _, h := range simHosts {
			setCordon(t, h, false)
		}
	})
	for i, name := range names {
		// Uncordon this host first: Harvester's node validator refuses to
		// cordon the last schedulable host (validateCordonAndMaintenanceMode).
		setCordon(t, simHosts[i], false)
		for j, h := range simHosts {
			if j != i {
				setCordon(t, h, true)
			}
		}
		r.mustCreate(name, append(slices.Clone(imageAndNet), extra...)...)
		t.Cleanup(func() { r.mustRun("rm", "-y", name) })
		if vmi := getVMI(t, name); vmi == nil || vmi.Status.NodeName != simHosts[i] {
			t.Fatalf("%s was not placed on %s, the only schedulable host", name, simHosts[i])
		}
	}
	for _, h := range simHosts {
		setCordon(t, h, false)
	}
}

// identity is what must not change when a machine's VM moves: the
// driver's stored ownership and the objects' UIDs and labels.
type identity struct {
	MachineID, VMUID, VMLabelID, VMIUID, IP string
}

// readMachineConfig decodes the machine's config.json (rancher-machine's
// store) into v.
func readMachineConfig(t *testing.T, r *rm, name string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(r.store, "machines", name, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

func machineIdentity(t *testing.T, r *rm, name string) identity {
	t.Helper()
	var host struct {
		Name   string
		Driver struct{ MachineID, VMUID string }
	}
	readMachineConfig(t, r, name, &host)
	if host.Name != name || host.Driver.MachineID == "" || host.Driver.VMUID == "" {
		t.Fatalf("config.json of %s: name %q, MachineID %q, VMUID %q", name, host.Name, host.Driver.MachineID, host.Driver.VMUID)
	}
	vm, vmi := getVM(t, name), getVMI(t, name)
	if vmi == nil {
		t.Fatalf("%s has no VMI", name)
	}
	return identity{
		MachineID: host.Driver.MachineID, VMUID: host.Driver.VMUID, VMLabelID: vm.Labels[harvester.LabelMachineID],
		VMIUID: string(vmi.UID), IP: r.stdout("ip", name),
	}
}

// sample is one look at a machine through rancher-machine: the command
// (status or ip) and its answer.
type sample struct {
	start, end      time.Time
	command, answer string
}

// watcher runs `rancher-machine status` and `ip` on a machine, one after
// the other, until stopped.
type watcher struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []sample
}

func watchMachine(r *rm, name string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{cancel: cancel}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			s := sample{start: time.Now(), command: []string{"status", "ip"}[i%2]}
			out, err := r.runCtx(ctx, nil, s.command, name)
			s.answer, s.end = lastLine(out, err), time.Now()
			if ctx.Err() != nil {
				return // cut short by stop
			}
			w.mu.Lock()
			w.samples = append(w.samples, s)
			w.mu.Unlock()
		}
	}()
	return w
}

// after waits (up to a minute) until n samples started after t.
func (w *watcher) after(t time.Time, n int) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		w.mu.Lock()
		got := 0
		for _, s := range w.samples {
			if s.start.After(t) {
				got++
			}
		}
		w.mu.Unlock()
		if got >= n {
			return
		}
	}
}

// stop ends the watch and returns the samples.
func (w *watcher) stop() []sample {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples
}

// lastLine is a command's answer: its last output line that is not the
// plugin's progress ("(<machine>) ..."), or the error with the output.
func lastLine(out string, err error) string {
	if err != nil {
		return fmt.Sprintf("error %v: %s", err, strings.TrimSpace(out))
	}
	var last string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "(") {
			last = l
		}
	}
	return last
}

// checkSamples fails on any status sample that is not Running and any ip
// sample that is not ip, and returns how many lay wholly within [from, to].
func checkSamples(t *testing.T, name, ip string, samples []sample, from, to time.Time) int {
	t.Helper()
	within := 0
	for i, s := range samples {
		if want := map[string]string{"status": "Running", "ip": ip}[s.command]; s.answer != want {
			t.Errorf("%s sample %d at %s: %s said %q, want %q", name, i, s.start.Format("15:04:05.000"), s.command, s.answer, want)
		}
		if !s.start.Before(from) && !s.end.After(to) {
			within++
		}
	}
	return within
}

// migrate creates a VirtualMachineInstanceMigration of vmi and waits until
// it ends; it returns the migration and when it was seen created and ended.
func migrate(t *testing.T, vmi string) (m *kubevirtv1.VirtualMachineInstanceMigration, created, ended time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := virt.KubevirtV1().VirtualMachineInstanceMigrations(namespace).Create(ctx, &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: vmi + "-mig-"},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create migration of %s: %v", vmi, err)
	}
	created = time.Now()
	t.Cleanup(func() {
		_ = virt.KubevirtV1().VirtualMachineInstanceMigrations(namespace).Delete(context.Background(), m.Name, metav1.DeleteOptions{})
	})
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := virt.KubevirtV1().VirtualMachineInstanceMigrations(namespace).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		m = got
		return m.Status.Phase == kubevirtv1.MigrationSucceeded || m.Status.Phase == kubevirtv1.MigrationFailed, nil
	})
	ended = time.Now()
	if err != nil {
		t.Fatalf("migration %s of %s: %v (phase %s)", m.Name, vmi, err, m.Status.Phase)
	}
	if m.Status.Phase != kubevirtv1.MigrationSucceeded {
		t.Fatalf("migration %s of %s: phase %s, want Succeeded", m.Name, vmi, m.Status.Phase)
	}
	return m, created, ended
}

// TestMachineSurvivesMigration: a live migration of a machine's VM moves
// it to another host while rancher-machine keeps seeing it Running at the
// same address (polled throughout, never Error, Stopped or Starting); the
// machine keeps its name, the machine ID and VM UID the driver stored, its
// VMI (the same object) and SSH access. A machine pinned to a zone
// (--harvester-vm-affinity) migrates within that zone only.
//
// Sequential: status and ip must answer within a 4 s migration, which
// other tests' load stretches.
func TestMachineSurvivesMigration(t *testing.T) {
	harness.NeedGuests(t)
	r := newRM(t, "e2e-mig")
	plain, pinned := "e2e-mig-pool1-m0000", "e2e-mig-pinned-a0000"
	r.mustCreate(plain, imageAndNet...)
	t.Cleanup(func() { r.mustRun("rm", "-y", plain) })
	r.mustCreate(pinned, append(slices.Clone(imageAndNet), zoneAffinity("sim-zone-a"))...)
	t.Cleanup(func() { r.mustRun("rm", "-y", pinned) })

	t.Run("plain", func(t *testing.T) {
		before := machineIdentity(t, r, plain)
		src := getVMI(t, plain).Status.NodeName
		w := watchMachine(r, plain)
		m, created, ended := migrate(t, plain)
		w.after(ended, 4) // and a few looks after it
		samples := w.stop()
		during := checkSamples(t, plain, before.IP, samples, created, ended)
		if during == 0 {
			t.Errorf("no status/ip sample fell within the migration (%s); %d samples", ended.Sub(created), len(samples))
		}
		t.Logf("%d samples, %d during the %s migration", len(samples), during, ended.Sub(created).Round(time.Millisecond))

		vmi := getVMI(t, plain)
		ms := vmi.Status.MigrationState
		if vmi.Status.NodeName == src || ms == nil || !ms.Completed || ms.SourceNode != src || ms.TargetNode != vmi.Status.NodeName || ms.MigrationUID != m.UID {
			t.Errorf("VMI on %s (was %s), migrationState %+v, want moved by migration %s", vmi.Status.NodeName, src, ms, m.UID)
		}
		if after := machineIdentity(t, r, plain); after != before {
			t.Errorf("identity after migration %+v, want %+v", after, before)
		}
		if before.VMLabelID != before.MachineID || string(getVM(t, plain).UID) != before.VMUID {
			t.Errorf("VM label %s / UID do not match config.json's MachineID %s / VMUID %s", before.VMLabelID, before.MachineID, before.VMUID)
		}
		if out := r.mustRun("ssh", plain, "hostname"); strings.TrimSpace(out) != plain {
			t.Errorf("ssh hostname after migration: %q, want %s", out, plain)
		}
		if s := status(t, r, plain); s != "Running" {
			t.Errorf("status after migration %q", s)
		}
	})

	t.Run("zone", func(t *testing.T) {
		before := machineIdentity(t, r, pinned)
		src := getVMI(t, pinned).Status.NodeName
		want := map[string]string{"harvester-node-0": "harvester-node-2", "harvester-node-2": "harvester-node-0"}[src]
		if want == "" {
			t.Fatalf("%s pinned to sim-zone-a is on %s", pinned, src)
		}
		migrate(t, pinned)
		vmi := getVMI(t, pinned)
		if vmi.Status.NodeName != want || vmi.Annotations[labelZone] != "sim-zone-a" {
			t.Errorf("after migration on %s, zone annotation %q; want %s (the only other sim-zone-a host), sim-zone-a",
				vmi.Status.NodeName, vmi.Annotations[labelZone], want)
		}
		if after := machineIdentity(t, r, pinned); after != before {
			t.Errorf("identity after migration %+v, want %+v", after, before)
		}
		if s := status(t, r, pinned); s != "Running" {
			t.Errorf("status after migration %q", s)
		}
	})
}

// migratedTo reads harvester-sim's report line "migrated  ns/vm -> host".
func migratedTo(out, vm string) []string {
	var to []string
	for _, m := range regexp.MustCompile(`(?m)^\s*migrated\s+`+regexp.QuoteMeta(namespace+"/"+vm)+` -> (\S+)\s*$`).FindAllStringSubmatch(out, -1) {
		to = append(to, m[1])
	}
	return to
}

// checkHostMaintained: host is cordoned with maintain-status completed
// (on=true), or schedulable without it.
func checkHostMaintained(t *testing.T, host string, on bool) {
	t.Helper()
	n, err := kube.CoreV1().Nodes().Get(context.Background(), host, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status, has := n.Annotations["harvesterhci.io/maintain-status"]
	if on && (status != "completed" || !n.Spec.Unschedulable) || !on && (has || n.Spec.Unschedulable) {
		t.Errorf("%s: maintain-status %q (set %v), unschedulable %v; want in maintenance %v", host, status, has, n.Spec.Unschedulable, on)
	}
}

// nodeEvents lists a host's events (the simulator's nodedrain controller
// records its refusals and waits there), to explain a failure.
func nodeEvents(host string) string {
	list, err := kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + host})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.LastTimestamp.Format(time.RFC3339)+" "+e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}

// TestMaintenanceWithPoolOverThreeHosts: a pool of three machines, one on
// each host. maintenance-check predicts that the machine on the host
// migrates, to either other host; `harvester-sim maintenance enable` then
// live-migrates exactly that machine (its VMI is the same object: never
// shut down), rancher-machine sees it Running at its address throughout,
// the command exits 0 with the host completed, the target is one
// maintenance-check named, and the other machines stay where they are.
//
// Sequential: it cordons hosts and puts one into maintenance.
func TestMaintenanceWithPoolOverThreeHosts(t *testing.T) {
	const cluster = "e2e-mpool"
	r := newRM(t, cluster)
	names := []string{cluster + "-pool1-p0000", cluster + "-pool1-p0001", cluster + "-pool1-p0002"}
	createOnEachHost(t, r, names)
	const i = 2
	host, moving := simHosts[i], names[i]
	before := map[string]identity{}
	for _, n := range names {
		before[n] = machineIdentity(t, r, n)
	}

	out, stderr, code := maintenanceCheck(t, "--cluster-name", cluster, "-o", "json", host)
	res := decodeCheck(t, out)
	if code != 0 || res.Failed || len(res.VMs) != 1 || len(res.Losses) != 0 {
		t.Fatalf("maintenance-check %s: exit %d %+v\n%s; want exit 0, one VM, no losses", host, code, res, stderr)
	}
	predicted := res.VMs[0]
	others := slices.DeleteFunc(slices.Clone(simHosts), func(h string) bool { return h == host })
	if predicted.VM != moving || predicted.Host != host || predicted.Action != "migrates" || !slices.Equal(predicted.Targets, others) {
		t.Errorf("maintenance-check %s: %+v; want %s migrates to %v", host, predicted, moving, others)
	}

	disableAfter(t, host)
	w := watchMachine(r, moving)
	start := time.Now()
	out, code = harvesterSim(t, "maintenance enable", "--timeout", "2m", host)
	end := time.Now()
	w.after(end, 4)
	samples := w.stop()
	if code != 0 {
		t.Fatalf("maintenance enable %s: exit %d\n%s\nthe host's events: %s", host, code, out, nodeEvents(host))
	}
	t.Logf("maintenance enable %s took %s:\n%s", host, end.Sub(start).Round(time.Millisecond), out)
	if during := checkSamples(t, moving, before[moving].IP, samples, start, end); during == 0 {
		t.Errorf("no status/ip sample fell within the maintenance (%d samples)", len(samples))
	}
	to := migratedTo(out, moving)
	if len(to) != 1 || !slices.Contains(predicted.Targets, to[0]) || strings.Contains(out, "shut down") || strings.Contains(out, "blocked") {
		t.Fatalf("report:\n%s\nwant %s migrated once, to one of %v, nothing shut down or blocked", out, moving, predicted.Targets)
	}
	checkHostMaintained(t, host, true)
	for j, n := range names {
		vmi := getVMI(t, n)
		want := simHosts[j]
		if n == moving {
			want = to[0]
		}
		if vmi == nil || vmi.Status.NodeName != want || vmi.Status.Phase != kubevirtv1.Running {
			t.Errorf("%s: VMI %v, want Running on %s", n, vmi != nil, want)
		}
		if after := machineIdentity(t, r, n); after != before[n] {
			t.Errorf("%s: identity %+v, want %+v (same VMI: never shut down)", n, after, before[n])
		}
		if s := status(t, r, n); s != "Running" {
			t.Errorf("%s: status %q", n, s)
		}
	}

	if out, code := harvesterSim(t, "maintenance disable", host); code != 0 {
		t.Fatalf("maintenance disable %s: exit %d\n%s", host, code, out)
	}
	checkHostMaintained(t, host, false)
}

// TestVGPUMachineUnderMaintenance: a vGPU machine (its host is the only one
// offering the profile) cannot live-migrate (LiveMigratable False,
// HostDeviceNotLiveMigratable). Maintenance of its host without force is
// refused naming the VM and that reason, the host stays out of
// maintenance and the machine Running; with --force Harvester stops it
// (runStrategy Halted) and rancher-machine says Stopped; both as
// maintenance-check predicted. Disabling maintenance does not start it
// again: Harvester records no VM it force-stopped, so it stays Halted and
// Stopped until someone starts it (rancher-machine start, as Rancher does
// for a stopped machine), which brings it back Running on its host.
//
// Sequential: it changes a host's allocatable and puts the host into
// maintenance.
func TestVGPUMachineUnderMaintenance(t *testing.T) {
	harness.NeedGuests(t)
	const cluster = "e2e-mgpu"
	const profile = "nvidia.com/GRID_A100-2B"
	const host = "harvester-node-1"
	setAllocatable(t, host, profile, "1")
	t.Cleanup(func() { setAllocatable(t, host, profile, "") })
	r := newRM(t, cluster)
	name := cluster + "-gpu-g0000"
	r.mustCreate(name, append(slices.Clone(imageAndNet), `--harvester-vgpu-info={"vGPURequests":[{"name":"gpu1","deviceName":"`+profile+`"}]}`)...)
	t.Cleanup(func() { r.mustRun("rm", "-y", name) })
	vmi := getVMI(t, name)
	if vmi == nil || vmi.Status.NodeName != host {
		t.Fatalf("%s is not on %s, the only host with %s", name, host, profile)
	}
	before := machineIdentity(t, r, name)
	predict := func(args ...string) (string, string, int) {
		t.Helper()
		out, stderr, code := maintenanceCheck(t, append([]string{"--cluster-name", cluster, "-o", "json"}, args...)...)
		res := decodeCheck(t, out)
		if len(res.VMs) != 1 || res.VMs[0].VM != name {
			t.Fatalf("maintenance-check %v: %+v\n%s", args, res, stderr)
		}
		return res.VMs[0].Action, res.VMs[0].Reason, code
	}

	action, reason, code := predict(host)
	if action != "blocks" || reason != "HostDeviceNotLiveMigratable" || code != 1 {
		t.Errorf("maintenance-check %s: %s (%s), exit %d; want blocks (HostDeviceNotLiveMigratable), exit 1", host, action, reason, code)
	}
	disableAfter(t, host)
	out, code := harvesterSim(t, "maintenance enable", "--timeout", "1m", host)
	// nodedrain_controller.go's refusal with virt-handler's condition reason.
	want := namespace + "/" + name + " cannot be migrated due to HostDeviceNotLiveMigratable"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("maintenance enable %s: exit %d\n%s\nwant exit 1 and %q", host, code, out, want)
	}
	checkHostMaintained(t, host, false)
	if s := status(t, r, name); s != "Running" || machineIdentity(t, r, name) != before {
		t.Errorf("after the refusal: status %q, identity changed %v", s, machineIdentity(t, r, name) != before)
	}

	action, reason, code = predict("--force", host)
	if action != "shut down" || reason != "HostDeviceNotLiveMigratable" || code != 1 {
		// exit 1: the one-machine pool is lost.
		t.Errorf("maintenance-check --force %s: %s (%s), exit %d; want shut down (HostDeviceNotLiveMigratable), exit 1", host, action, reason, code)
	}
	out, code = harvesterSim(t, "maintenance enable", "--force", "--timeout", "1m", host)
	if code != 0 || !regexp.MustCompile(`(?m)^\s*shut down\s+`+regexp.QuoteMeta(namespace+"/"+name)+`\s*$`).MatchString(out) {
		t.Fatalf("maintenance enable --force %s: exit %d\n%s\nwant exit 0 and %s shut down", host, code, out, name)
	}
	checkHostMaintained(t, host, true)
	halted := func(when string) {
		t.Helper()
		if vm := getVM(t, name); vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy != kubevirtv1.RunStrategyHalted {
			t.Errorf("%s: runStrategy %v, want Halted", when, vm.Spec.RunStrategy)
		}
		if s := status(t, r, name); s != "Stopped" {
			t.Errorf("%s: status %q, want Stopped", when, s)
		}
	}
	halted("forced maintenance")

	if out, code := harvesterSim(t, "maintenance disable", host); code != 0 {
		t.Fatalf("maintenance disable %s: exit %d\n%s", host, code, out)
	}
	checkHostMaintained(t, host, false)
	halted("after disable")
	if vmi := getVMI(t, name); vmi != nil && vmi.Status.Phase != kubevirtv1.Succeeded {
		t.Errorf("after disable: VMI %s phase %s, want none or Succeeded", name, vmi.Status.Phase)
	}

	withDocker(t, name)
	r.mustRun("start", name)
	if s := status(t, r, name); s != "Running" {
		t.Errorf("after start: status %q", s)
	}
	if vmi := getVMI(t, name); vmi == nil || vmi.Status.NodeName != host {
		t.Errorf("after start: VMI not on %s", host)
	}
}
