package simctl

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// Harvester v1.8's keys and texts, written out from its source.
const (
	keyStrategy = "harvesterhci.io/maintain-mode-strategy"           // pkg/util/constants.go
	keyNodeName = "harvesterhci.io/maintain-mode-strategy-node-name" // pkg/util/constants.go
	keyStatus   = "harvesterhci.io/maintain-status"                  // maintain_controller.go
	// drainhelper.go errHAControlPlaneNode and errSingleControlPlaneNode.
	errHA     = "draining of this node is not possible: another controlplane is already in maintenance mode, cannot place current node in maintenance mode"
	errSingle = "draining of this node is not possible: single controlplane cluster, cannot place controlplane in maintenance mode"
)

// checkReport is maintenance-check's -o json, the fields these tests read.
type checkReport struct {
	Failed  bool `json:"failed"`
	Refused []struct {
		Host, Reason, Source string
	} `json:"refused"`
	VMs []struct {
		Host      string `json:"host"`
		Namespace string `json:"namespace"`
		VM        string `json:"vm"`
		Action    string `json:"action"`
		Why       string `json:"why"`
		Strategy  string `json:"maintainModeStrategy"`
		Restart   string `json:"restart"`
	} `json:"vms"`
}

// verdicts are the check's VMs by name: "action strategy|restart".
func (r checkReport) verdicts() map[string]string {
	out := map[string]string{}
	for _, v := range r.VMs {
		out[v.VM] = v.Action + " " + v.Strategy + "|" + v.Restart
	}
	return out
}

// maintenanceCheck runs bin/harvester-bootstrap maintenance-check -o json
// against the simulator and decodes its report.
func maintenanceCheck(t *testing.T, args ...string) (checkReport, int) {
	t.Helper()
	out, stderr, code, err := simtest.RunBin(testContext(t), "harvester-bootstrap", append([]string{"maintenance-check", "--kubeconfig", env.sim.Kubeconfig, "-o", "json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var r checkReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("maintenance-check %v: exit %d, %v\n%s\n%s", args, code, err, out, stderr)
	}
	return r, code
}

// strategyVM is a guest-cluster VM on host (preferred) labelled as the
// node driver labels its machines, with a maintain-mode strategy on the
// VM and its template ("" for none).
func strategyVM(t *testing.T, ns, name, strategy, host string, claims ...corev1.PersistentVolumeClaim) {
	t.Helper()
	l := map[string]string{"guestcluster.harvesterhci.io/name": "mm", "nodepool.harvesterhci.io/name": "p", "harvesterhci.io/vmName": name}
	if strategy != "" {
		l[keyStrategy] = strategy
	}
	createVM(t, ns, name, vmOpts{labels: l, userData: agentCloudConfig, affinity: preferHost(host), claims: claims})
}

// maintenanceScene is the test's own namespace once no other test's VMI
// is on the hosts; a failure must not leave host in maintenance (cordoned)
// for the tests after it.
func maintenanceScene(t *testing.T, host string) string {
	t.Helper()
	ns := testNamespace(t)
	aloneOnHosts(t, ns)
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = simCLI(t, "maintenance disable", host)
		}
	})
	return ns
}

// lateLabel labels a running VM (not its template) with a strategy, as an
// admin does, and waits until Harvester's VM controller has copied the
// label to the VMI; its launcher pod, made before, lacks it.
func lateLabel(t *testing.T, ns, name, strategy string) {
	t.Helper()
	patchVM(t, ns, name, map[string]any{"metadata": map[string]any{"labels": map[string]any{keyStrategy: strategy}}})
	waitVMI(t, ns, name, "labelled "+strategy, func(v *kubevirtv1.VirtualMachineInstance) bool { return v != nil && v.Labels[keyStrategy] == strategy })
}

func runStrategy(vm *kubevirtv1.VirtualMachine) kubevirtv1.VirtualMachineRunStrategy {
	if vm == nil || vm.Spec.RunStrategy == nil {
		return ""
	}
	return *vm.Spec.RunStrategy
}

func hostAnnotations(t *testing.T, host string) (map[string]string, bool) {
	t.Helper()
	n, err := env.kube.CoreV1().Nodes().Get(testContext(t), host, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Annotations, n.Spec.Unschedulable
}

// TestMaintainModeStrategy: on one host, a VM of each shutdown strategy
// and one without the label. maintenance-check (v1.8's nodedrain
// controller, maintain controller and disableMaintenanceMode) says the
// labelled ones are shut down, naming the strategy and when each is
// started again, and the other migrates; then the simulator does just
// that: maintenance completes, Shutdown stays off, AfterEnable runs again
// on another host once the host is completed, AfterDisable (annotated
// with the host) runs again once maintenance is disabled, which then
// fails on a conflict (and the annotation stays), as v1.8's action does.
// A label given to the running VM alone (mm-late) counts as well.
func TestMaintainModeStrategy(t *testing.T) {
	const host = "harvester-node-2"
	ns := maintenanceScene(t, host)
	strategies := map[string]string{"mm-off": "Shutdown", "mm-en": "ShutdownAndRestartAfterEnable", "mm-dis": "ShutdownAndRestartAfterDisable", "mm-mig": "", "mm-late": ""}
	for name, s := range strategies {
		strategyVM(t, ns, name, s, host)
	}
	for name := range strategies {
		if v := waitVMI(t, ns, name, "running, live-migratable", migratable); v.Status.NodeName != host {
			t.Fatalf("%s placed on %s, want %s", name, v.Status.NodeName, host)
		}
	}
	lateLabel(t, ns, "mm-late", "Shutdown")

	r, code := maintenanceCheck(t, "--namespace", ns, "--cluster-name", "mm", host)
	want := map[string]string{
		"mm-off": "shut down Shutdown|never",
		"mm-en":  "shut down ShutdownAndRestartAfterEnable|when the host's maintenance completes",
		"mm-dis": "shut down ShutdownAndRestartAfterDisable|when maintenance mode is disabled",
		"mm-mig": "migrates |",
		// Read on the VMI, where the VM controller copied it: stopped too.
		"mm-late": "shut down Shutdown|never",
	}
	got := r.verdicts()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("check: %s %q, want %q", name, got[name], w)
		}
	}
	// Four of a pool of five down, roles unknown: a risk, not a failure.
	if code != 0 || r.Failed {
		t.Errorf("check: exit %d, failed %v", code, r.Failed)
	}

	out, err := simCLI(t, "maintenance enable", "--timeout", "90s", host)
	if err != nil {
		t.Fatalf("enable: %v\n%s", err, out)
	}
	for name, w := range want {
		line := "shut down " + ns + "/" + name + "\n"
		if strings.HasPrefix(w, "migrates") {
			line = "migrated  " + ns + "/" + name + " -> "
		}
		if !strings.Contains(out, line) {
			t.Errorf("simulator's report lacks %q (the check said %q):\n%s", line, got[name], out)
		}
	}
	if ann, cordoned := hostAnnotations(t, host); ann[keyStatus] != "completed" || !cordoned {
		t.Errorf("host annotations %v cordoned %v, want completed", ann, cordoned)
	}
	off := waitVM(t, ns, "mm-off", "halted", func(vm *kubevirtv1.VirtualMachine) bool { return runStrategy(vm) == kubevirtv1.RunStrategyHalted })
	if _, ok := off.Annotations[keyNodeName]; ok {
		t.Errorf("mm-off (Shutdown) annotated %v", off.Annotations)
	}
	waitVM(t, ns, "mm-dis", "halted, annotated with the host", func(vm *kubevirtv1.VirtualMachine) bool {
		return runStrategy(vm) == kubevirtv1.RunStrategyHalted && vm.Annotations[keyNodeName] == host
	})
	// The maintain controller set the run strategy saved in
	// harvesterhci.io/vmRunStrategy, else RerunOnFailure.
	waitVM(t, ns, "mm-en", "started again, annotation removed", func(vm *kubevirtv1.VirtualMachine) bool {
		_, ok := vm.Annotations[keyNodeName]
		return vm != nil && runStrategy(vm) != kubevirtv1.RunStrategyHalted && runStrategy(vm) != "" && !ok
	})
	if v := waitVMI(t, ns, "mm-en", "running again", running); v.Status.NodeName == host {
		t.Errorf("mm-en restarted on the host in maintenance")
	}

	// disableMaintenanceMode (formatter.go) uncordons, starts mm-dis (the
	// start subresource patches the VM), then updates the VM object it
	// listed before the start to drop the annotation: kube-apiserver
	// refuses the stale write and the action fails with it.
	out, err = simCLI(t, "maintenance disable", host)
	if err == nil || !strings.Contains(out, "the object has been modified") {
		t.Errorf("disable: %v\n%s\nwant the conflict of disableMaintenanceMode's update", err, out)
	}
	if ann, cordoned := hostAnnotations(t, host); ann[keyStatus] != "" || cordoned {
		t.Errorf("after disable: annotations %v cordoned %v", ann, cordoned)
	}
	waitVM(t, ns, "mm-dis", "started by disable, still annotated", func(vm *kubevirtv1.VirtualMachine) bool {
		return runStrategy(vm) == kubevirtv1.RunStrategyAlways && vm.Annotations[keyNodeName] == host
	})
	waitVMI(t, ns, "mm-dis", "running again", running)
	if vm := waitVM(t, ns, "mm-off", "present", func(vm *kubevirtv1.VirtualMachine) bool { return vm != nil }); runStrategy(vm) != kubevirtv1.RunStrategyHalted {
		t.Errorf("mm-off (Shutdown) runs again: %s", runStrategy(vm))
	}
}

// TestMaintainModeStrategyForced: forced maintenance in v1.8 stops only
// the non-migratable VMs (nodedrain controller: shutdownVMs =
// nonMigratableVMs), overriding their strategy (they are not annotated,
// so never restarted); the drain skips the launcher pod of a labelled VM
// (maintainModeStrategyFilter), so a migratable labelled VM keeps running
// on the host, maintain-status goes running and never completed. The
// check says so (blocks, exit 1) and the simulator does it.
func TestMaintainModeStrategyForced(t *testing.T) {
	const host = "harvester-node-2"
	ns := maintenanceScene(t, host)
	rwo := claimTemplate("mf-dis-disk", fixtureImage, nil)
	rwo.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	strategyVM(t, ns, "mf-off", "Shutdown", host)
	strategyVM(t, ns, "mf-mig", "", host)
	strategyVM(t, ns, "mf-dis", "ShutdownAndRestartAfterDisable", host, rwo)
	strategyVM(t, ns, "mf-late", "", host)
	for _, name := range []string{"mf-off", "mf-mig", "mf-dis", "mf-late"} {
		if v := waitVMI(t, ns, name, "running with an address", hasIP); v.Status.NodeName != host {
			t.Fatalf("%s placed on %s, want %s", name, v.Status.NodeName, host)
		}
	}
	waitVMI(t, ns, "mf-off", "live-migratable", migratable)
	waitVMI(t, ns, "mf-late", "live-migratable", migratable)
	lateLabel(t, ns, "mf-late", "Shutdown")

	r, code := maintenanceCheck(t, "--namespace", ns, "--cluster-name", "mm", "--force", host)
	got := r.verdicts()
	// mf-late's pod lacks the label: the drain evicts it, it migrates.
	want := map[string]string{"mf-off": "blocks Shutdown|", "mf-mig": "migrates |", "mf-dis": "shut down ShutdownAndRestartAfterDisable|never",
		"mf-late": "migrates Shutdown|"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("check: %s %q, want %q", name, got[name], w)
		}
	}
	if code != 1 || !r.Failed {
		t.Errorf("check: exit %d failed %v, want 1", code, r.Failed)
	}

	out, err := simCLI(t, "maintenance enable", "--force", "--timeout", "30s", host)
	if err == nil {
		t.Fatalf("forced enable completed, want mf-off left on the host:\n%s", out)
	}
	for _, line := range []string{"blocked   " + ns + "/mf-off: the drain skipped its pod", "migrated  " + ns + "/mf-mig -> ", "shut down " + ns + "/mf-dis\n",
		"migrated  " + ns + "/mf-late -> "} {
		if !strings.Contains(out, line) {
			t.Errorf("simulator's report lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "being stopped") {
		t.Errorf("simulator says a VM is being stopped:\n%s", out)
	}
	if ann, cordoned := hostAnnotations(t, host); ann[keyStatus] != "running" || !cordoned {
		t.Errorf("host annotations %v cordoned %v, want maintain-status running", ann, cordoned)
	}
	if v := waitVMI(t, ns, "mf-off", "running", running); v.Status.NodeName != host {
		t.Errorf("mf-off moved to %s", v.Status.NodeName)
	}
	if vm := waitVM(t, ns, "mf-off", "present", func(vm *kubevirtv1.VirtualMachine) bool { return vm != nil }); runStrategy(vm) != kubevirtv1.RunStrategyAlways {
		t.Errorf("mf-off run strategy %s, want Always (not stopped)", runStrategy(vm))
	}
	dis := waitVM(t, ns, "mf-dis", "halted", func(vm *kubevirtv1.VirtualMachine) bool { return runStrategy(vm) == kubevirtv1.RunStrategyHalted })
	if _, ok := dis.Annotations[keyNodeName]; ok {
		t.Errorf("forced: mf-dis annotated %v", dis.Annotations)
	}
	if out, err := simCLI(t, "maintenance disable", host); err != nil {
		t.Fatalf("disable: %v\n%s", err, out)
	}
	if vm := waitVM(t, ns, "mf-dis", "present", func(vm *kubevirtv1.VirtualMachine) bool { return vm != nil }); runStrategy(vm) != kubevirtv1.RunStrategyHalted {
		t.Errorf("mf-dis started by disable after forced maintenance: %s", runStrategy(vm))
	}
}

// setRoles sets (or with roles false removes) the control-plane and etcd
// role labels of hosts.
func setRoles(t *testing.T, roles bool, hosts ...string) {
	t.Helper()
	var v any
	if roles {
		v = "true"
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{
		"node-role.kubernetes.io/control-plane": v, "node-role.kubernetes.io/etcd": v}}})
	for _, h := range hosts {
		if _, err := env.kube.CoreV1().Nodes().Patch(testContext(t), h, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// refusedBy is the check's refusal of host, or "".
func refusedBy(r checkReport, host string) string {
	for _, f := range r.Refused {
		if f.Host == host {
			return f.Reason + " (" + f.Source + ")"
		}
	}
	return ""
}

// TestControlPlaneRule: v1.8's drainhelper.DrainPossible. Three hosts, all
// control-plane and etcd: with harvester-node-0 in maintenance the check
// of harvester-node-1 exits 1 quoting Harvester's reason and the
// simulator's enable is refused with it; naming both hosts in one check
// refuses the second; with harvester-node-0 the lone control-plane host,
// it is refused (single control plane) and a worker is not.
func TestControlPlaneRule(t *testing.T) {
	ns := testNamespace(t)
	aloneOnHosts(t, ns)
	all := []string{"harvester-node-0", "harvester-node-1", "harvester-node-2"}
	setRoles(t, true, all...)
	t.Cleanup(func() {
		_, _ = simCLI(t, "maintenance disable", all[0])
		setRoles(t, false, all...)
	})
	if out, err := simCLI(t, "maintenance enable", "--timeout", "60s", all[0]); err != nil {
		t.Fatalf("enable %s: %v\n%s", all[0], err, out)
	}
	const source = " (pkg/util/drainhelper/helper.go DrainPossible)"
	r, code := maintenanceCheck(t, all[1])
	if code != 1 || refusedBy(r, all[1]) != errHA+source {
		t.Errorf("check of %s: exit %d, refused %+v; want exit 1 and %q", all[1], code, r.Refused, errHA)
	}
	out, err := simCLI(t, "maintenance enable", "--timeout", "30s", all[1])
	if err == nil || !strings.Contains(out, errHA) {
		t.Errorf("simulator's enable of %s: %v\n%s\nwant refused with %q", all[1], err, out, errHA)
	}
	if ann, cordoned := hostAnnotations(t, all[1]); len(ann[keyStatus]+ann["harvesterhci.io/drain-requested"]) > 0 || cordoned {
		t.Errorf("refused host: annotations %v cordoned %v", ann, cordoned)
	}
	if out, err := simCLI(t, "maintenance disable", all[0]); err != nil {
		t.Fatalf("disable: %v\n%s", err, out)
	}

	r, code = maintenanceCheck(t, all[0], all[1])
	if code != 1 || len(r.Refused) != 1 || refusedBy(r, all[1]) != errHA+source {
		t.Errorf("check of two control-plane hosts: exit %d, refused %+v; want %s refused with %q", code, r.Refused, all[1], errHA)
	}

	setRoles(t, false, all[1], all[2])
	r, code = maintenanceCheck(t, all[0])
	if code != 1 || refusedBy(r, all[0]) != errSingle+source {
		t.Errorf("check of the lone control-plane host: exit %d, refused %+v; want %q", code, r.Refused, errSingle)
	}
	out, err = simCLI(t, "maintenance enable", "--timeout", "30s", all[0])
	if err == nil || !strings.Contains(out, errSingle) {
		t.Errorf("simulator's enable of the lone control-plane host: %v\n%s\nwant refused with %q", err, out, errSingle)
	}
	if r, code = maintenanceCheck(t, all[1]); code != 0 || len(r.Refused) != 0 {
		t.Errorf("check of a worker: exit %d, refused %+v", code, r.Refused)
	}
}
