package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// upgradeVerdicts is maintenance-check --upgrade -o json, decoded by hand:
// per VM its action and whether restoreVM brings it back.
type upgradeVerdicts struct {
	Failed bool `json:"failed"`
	VMs    []struct {
		VM       string `json:"vm"`
		Action   string `json:"action"`
		Restored bool   `json:"restored"`
		Why      string `json:"why"`
	} `json:"vms"`
}

// upgradeAfterFailedEvacuation is the issue-41 case, as KubeVirt v1.7
// leaves it: TestMigrationTargetHostDown's evacuation of mt-vm Failed with a
// FailedMigration warning event (its target host died), and the VMI, still
// the same one, moved to the third host on the second try. (A VMI that dies
// with its host takes its Failed migrations along: KubeVirt's migration
// controller deletes every migration whose VMI is gone,
// pkg/virt-controller/watch/migration/migration.go, before the VM
// controller starts the VMI again; only a VMI that survives keeps them.)
// The dead host comes back and the drained one leaves maintenance. hu-pin,
// pinned to the drained host by a nodeSelector, is what Harvester's
// vm-live-migrate-detector stops. Then, with the restore-VM option:
//   - maintenance-check --upgrade --restore-vm -o json names mt-vm shut down
//     (its failed evacuation, not restored: vm-live-migrate-detector's
//     ConfigMap lists only the VMs it stops) and hu-pin shut down and
//     restored;
//   - `harvester-sim upgrade --restore-vm` shuts down exactly what the
//     check named shut down, and restores exactly what it named restored;
//   - afterwards hu-pin runs again and its guest node is Ready; mt-vm is
//     stopped, its run strategy still RerunOnFailure, as `virtctl stop`
//     leaves it.
func upgradeAfterFailedEvacuation(ctx context.Context, t *testing.T, s *simtest.Sim, kc kubernetes.Interface, vc kubevirt.Interface, drained, dead string) {
	if err := s.Fault(ctx, "host-down", "--remove", dead); err != nil {
		t.Fatal(err)
	}
	if _, err := simtest.WaitNode(ctx, kc, dead, func(n *corev1.Node) bool {
		return simtest.NodeReady(n) == corev1.ConditionTrue && !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
			return tt.Key == "kubevirt.io/drain" || tt.Key == corev1.TaintNodeOutOfService
		})
	}); err != nil {
		t.Fatalf("host %s back: %v", dead, err)
	}
	if out, err := simCLI(t, "maintenance", "disable", "--state-dir", s.Dir, drained); err != nil {
		t.Fatalf("maintenance disable %s: %v\n%s", drained, err, out)
	}
	guest := guestClient(ctx, t, s)
	waitGuestNode(ctx, t, guest, "mt-vm", corev1.ConditionTrue)
	pinned := hostDownVM("hu-pin")
	pinned.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": drained}
	if _, err := vc.KubevirtV1().VirtualMachines("default").Create(ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGuestNode(ctx, t, guest, "hu-pin", corev1.ConditionTrue)
	failedEvacuation(ctx, t, kc, vc, "mt-vm")

	out, code := upgradeCheck(ctx, t, s, "--upgrade", "--restore-vm", "--cluster-name", hdCluster, "-o", "json")
	var res upgradeVerdicts
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("maintenance-check: %v\n%s", err, out)
	}
	predicted, restoredByCheck := map[string]bool{}, map[string]bool{}
	for _, v := range res.VMs {
		if v.Action == "shut down" || v.Action == "blocks" {
			predicted["default/"+v.VM] = true
		}
		if v.Restored {
			restoredByCheck["default/"+v.VM] = true
		}
		switch {
		case v.VM == "mt-vm" && (v.Action != "shut down" || v.Restored || !strings.Contains(v.Why, "its evacuation migration kubevirt-evacuation-")):
			t.Errorf("mt-vm: %+v, want shut down for its failed evacuation, not restored", v)
		case v.VM == "hu-pin" && (v.Action != "shut down" || !v.Restored || !strings.Contains(v.Why, "it has a nodeSelector")):
			t.Errorf("hu-pin: %+v, want shut down by the detector and restored", v)
		}
	}
	if len(res.VMs) != 2 || code != 0 {
		t.Errorf("maintenance-check exit %d (want 0: the pool keeps a node at every step):\n%s", code, out)
	}

	upgraded, err := simCLI(t, "upgrade", "--state-dir", s.Dir, "--timeout", "90s", "--restore-vm")
	t.Logf("harvester-sim upgrade:\n%s", upgraded)
	if err != nil {
		t.Fatalf("harvester-sim upgrade: %v", err)
	}
	shut, restored := reportedVMs(upgraded, "shut down"), reportedVMs(upgraded, "restored")
	for _, vm := range shut {
		if !predicted[vm] {
			t.Errorf("the upgrade shut down %s; maintenance-check did not say so:\n%s", vm, out)
		}
	}
	if !slices.Equal(shut, []string{"default/hu-pin", "default/mt-vm"}) || !slices.Equal(restored, []string{"default/hu-pin"}) ||
		len(restoredByCheck) != 1 || !restoredByCheck["default/hu-pin"] {
		t.Errorf("upgrade shut down %v, restored %v; check restored %v: want both shut down, hu-pin restored by both", shut, restored, restoredByCheck)
	}
	waitGuestNode(ctx, t, guest, "hu-pin", corev1.ConditionTrue)
	// The script's `virtctl stop` is KubeVirt's stop subresource, which
	// leaves a RerunOnFailure VM's run strategy and asks virt-controller to
	// stop it (virt-api lifecycle.go StopVMRequestHandler); it stays
	// stopped: nothing restarts it.
	cfg, err := s.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	sdyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	if err := simtest.WaitObject(ctx, sdyn, kubevirtv1.GroupVersion.WithResource("virtualmachines"), "default", "mt-vm", func(u *unstructured.Unstructured) bool {
		if u == nil {
			return false
		}
		rs, _, _ := unstructured.NestedString(u.Object, "spec", "runStrategy")
		st, _, _ := unstructured.NestedString(u.Object, "status", "printableStatus")
		last = rs + " " + st
		return rs == string(kubevirtv1.RunStrategyRerunOnFailure) && st == string(kubevirtv1.VirtualMachineStatusStopped)
	}); err != nil {
		t.Errorf("mt-vm after the upgrade: %v (run strategy, status: %s); want RerunOnFailure and Stopped (nothing restarts it)", err, last)
	}
	// Harvester's util.GetRestoreVMConfigMapName: the Upgrade's name and
	// "restore-vm"; the report's first line names the Upgrade.
	upgrade := regexp.MustCompile(`(?m)^upgrade harvester-system/(hvst-upgrade-\S+)$`).FindStringSubmatch(upgraded)
	if upgrade == nil {
		t.Fatalf("the report names no Upgrade:\n%s", upgraded)
	}
	cm, err := kc.CoreV1().ConfigMaps("harvester-system").Get(ctx, upgrade[1]+"-restore-vm", metav1.GetOptions{})
	if err != nil || cm.Data[drained] != "default/hu-pin" {
		t.Errorf("restore-vm ConfigMap: %v %v, want %s: default/hu-pin", err, cm.Data, drained)
	}
}

// failedEvacuation waits until VMI name has a kubevirt-evacuation-*
// migration in phase Failed with a FailedMigration warning event (the
// precondition of the test; KubeVirt fails it once the VMI it evacuated
// failed with its host).
func failedEvacuation(ctx context.Context, t *testing.T, kc kubernetes.Interface, vc kubevirt.Interface, name string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		migs, err := vc.KubevirtV1().VirtualMachineInstanceMigrations("default").List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io/vmi-name=" + name})
		if err == nil {
			for _, m := range migs.Items {
				last = m.Name + " " + string(m.Status.Phase)
				if !strings.HasPrefix(m.Name, "kubevirt-evacuation-") || m.Status.Phase != kubevirtv1.MigrationFailed {
					continue
				}
				sel := fields.Set{"involvedObject.name": m.Name, "type": "Warning", "reason": "FailedMigration"}.AsSelector().String()
				if ev, err := kc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel}); err == nil && len(ev.Items) > 0 {
					return
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("no Failed evacuation of %s with a FailedMigration event; last migration %s; migration events: %s",
		name, last, migrationEvents(ctx, kc))
}

// migrationEvents are the default namespace's events about migrations,
// for a failure message: what KubeVirt did with them. It runs after ctx
// expired, so it has its own short deadline.
func migrationEvents(ctx context.Context, kc kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	sel := fields.Set{"involvedObject.kind": "VirtualMachineInstanceMigration"}.AsSelector().String()
	ev, err := kc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return "list events: " + err.Error()
	}
	var out []string
	for _, e := range ev.Items {
		out = append(out, e.InvolvedObject.Name+" "+e.Type+" "+e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}

// upgradeCheck runs bin/harvester-bootstrap maintenance-check against s.
func upgradeCheck(ctx context.Context, t *testing.T, s *simtest.Sim, args ...string) (string, int) {
	t.Helper()
	bin, err := simtest.Bin("harvester-bootstrap")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"maintenance-check", "--kubeconfig", s.Kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("maintenance-check: %v\n%s", err, stderr.String())
	}
	return string(out), 0
}

// reportedVMs are the VMs harvester-sim upgrade's report lists under what
// ("  shut down ns/vm"), sorted.
func reportedVMs(report, what string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), what+" "); ok {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	slices.Sort(out)
	return out
}
