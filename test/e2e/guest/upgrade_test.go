package guest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var simHosts = []string{"harvester-node-0", "harvester-node-1", "harvester-node-2"}

// cordon sets a host's spec.unschedulable, as kubectl cordon/uncordon do.
func cordon(t *testing.T, host string, on bool) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": on}})
	if _, err := env.kube.CoreV1().Nodes().Patch(testContext(t), host, types.StrategicMergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon %s=%v: %v", host, on, err)
	}
}

// machineAnswer runs `rancher-machine COMMAND name` and returns its answer:
// the last line that is not the plugin's progress ("(<machine>) ...").
func machineAnswer(t *testing.T, m *simtest.Machines, command, name string) string {
	t.Helper()
	out, err := m.Run(testContext(t), command, name)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "(") {
			last = l
		}
	}
	return last
}

// TestUpgradeKeepsGuestNodesReady: a K3s pool of three machines, one on
// each host (the other hosts are cordoned while each is created; the
// machines carry no host affinity). maintenance-check --upgrade predicts
// that every one migrates and no guest cluster loses quorum (exit 0);
// `harvester-sim upgrade` takes the hosts through the pre-drain one after
// the other and exits 0; every guest node stays Ready throughout (polled)
// and every machine is Running at its address afterwards, each VMI the
// same object (live-migrated, never restarted).
func TestUpgradeKeepsGuestNodesReady(t *testing.T) {
	const cluster = "upg-pool"
	m, err := env.sim.NewMachines(t.TempDir(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-ssh-user=ubuntu", "--harvester-wait-timeout=120", "--harvester-cloud-provider=k3s"}
	names := make([]string, len(simHosts))
	t.Cleanup(func() {
		for _, h := range simHosts {
			cordon(t, h, false)
		}
	})
	for i := range simHosts {
		names[i] = fmt.Sprintf("%s-pool1-%d", cluster, i)
		// Uncordon this host first: Harvester's node validator refuses to
		// cordon the last schedulable host (validateCordonAndMaintenanceMode).
		cordon(t, simHosts[i], false)
		for j, h := range simHosts {
			if j != i {
				cordon(t, h, true)
			}
		}
		if _, err := m.Create(testContext(t), names[i], flags...); err != nil {
			t.Fatal(err)
		}
		name := names[i]
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if _, err := m.Remove(ctx, name); err != nil {
				t.Error(err)
			}
		})
	}
	for _, h := range simHosts {
		cordon(t, h, false)
	}
	t.Cleanup(func() { simtest.NoPluginLeft(t, m.Store) })
	guest, _ := guestClients(t, cluster)
	checkNodesJoined(t, guest, names)
	ccmInit(t, guest) // --guest-kubeconfig is taken only once a node's providerID names its VM
	ip, uid := map[string]string{}, map[string]string{}
	for i, n := range names {
		vmi, err := env.virt.KubevirtV1().VirtualMachineInstances(vmNamespace).Get(testContext(t), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if vmi.Status.NodeName != simHosts[i] {
			t.Fatalf("%s is on %s, want %s (the only schedulable host)", n, vmi.Status.NodeName, simHosts[i])
		}
		ip[n], uid[n] = machineAnswer(t, m, "ip", n), string(vmi.UID)
	}

	kubeconfig := filepath.Join(env.sim.Dir, "guests", cluster, "kubeconfig")
	out, code := runMaintenanceCheck(t, "--upgrade", "--cluster-name", cluster, "--namespace", vmNamespace, "--guest-kubeconfig", kubeconfig, "-o", "json")
	var res struct {
		Hosts []string `json:"hosts"`
		VMs   []struct {
			Host, VM, Action string
		} `json:"vms"`
		Losses []json.RawMessage `json:"losses"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 0 || len(res.Losses) != 0 || strings.Join(res.Hosts, ",") != strings.Join(simHosts, ",") {
		t.Errorf("maintenance-check --upgrade: exit %d\n%s\nwant exit 0, hosts %v, no losses", code, out, simHosts)
	}
	predicted := map[string]bool{}
	for _, v := range res.VMs {
		if v.Action != "migrates" {
			t.Errorf("maintenance-check --upgrade: %+v, want migrates", v)
		}
		predicted[v.VM] = true
	}
	for _, n := range names {
		if !predicted[n] {
			t.Errorf("maintenance-check --upgrade says nothing of %s:\n%s", n, out)
		}
	}

	// Watch the guest's nodes while the upgrade runs.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var notReady []string
	looks := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			nodes, err := guest.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if ctx.Err() != nil {
				return
			}
			looks++
			switch {
			case err != nil:
				notReady = append(notReady, time.Now().Format("15:04:05.000")+" list: "+err.Error())
			case len(nodes.Items) != len(names):
				notReady = append(notReady, fmt.Sprintf("%s %d nodes", time.Now().Format("15:04:05.000"), len(nodes.Items)))
			}
			for _, n := range nodes.Items {
				if !nodeReady(&n) {
					notReady = append(notReady, time.Now().Format("15:04:05.000")+" "+n.Name+" not Ready")
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	upgraded, err := exec.CommandContext(testContext(t), bin, "upgrade", "--state-dir", env.sim.Dir, "--timeout", "90s").CombinedOutput()
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("harvester-sim upgrade: %v\n%s", err, upgraded)
	}
	t.Logf("upgrade:\n%s", upgraded)
	for _, n := range names {
		if !strings.Contains(string(upgraded), "migrated  "+vmNamespace+"/"+n+" -> ") {
			t.Errorf("upgrade report does not say %s migrated", n)
		}
	}
	if strings.Contains(string(upgraded), "shut down") || strings.Contains(string(upgraded), "blocked") {
		t.Errorf("upgrade shut down or blocked something:\n%s", upgraded)
	}
	if len(notReady) > 0 || looks == 0 {
		t.Errorf("guest nodes during the upgrade (%d looks): %v", looks, notReady)
	}
	checkNodesJoined(t, guest, names)
	for _, n := range names {
		if s := machineAnswer(t, m, "status", n); s != "Running" {
			t.Errorf("%s: status %q after the upgrade", n, s)
		}
		if got := machineAnswer(t, m, "ip", n); got != ip[n] {
			t.Errorf("%s: ip %q after the upgrade, want %s", n, got, ip[n])
		}
		vmi, err := env.virt.KubevirtV1().VirtualMachineInstances(vmNamespace).Get(testContext(t), n, metav1.GetOptions{})
		if err != nil || string(vmi.UID) != uid[n] {
			t.Errorf("%s: VMI %v, want the same VMI (uid %s)", n, err, uid[n])
		}
	}
}

// upgradeRestoresVGPUPool: TestMaintenanceCheckGuestQuorum's pool of three
// vGPU machines (etcd members, one per host) through the upgrade. The
// driver gives a vGPU machine a nodeSelector, so Harvester v1.8's
// vm-live-migrate-detector stops it before its host's drain (KubeVirt
// cannot migrate it; without that the pre-drain would wait for it
// forever). Without the restore-VM option Harvester's upgrade webhook
// refuses the Upgrade (maintenance-check: exit 1, "refused"; `harvester-sim
// upgrade`, whose Upgrade Harvester's webhook judges, exits 1 with the
// same refusal naming every machine); with it
// maintenance-check says each machine is shut down and restored, one at a
// time, and etcd keeps its quorum (exit 0); `harvester-sim upgrade
// --restore-vm` exits 0 having shut down and restored exactly those, and
// every guest node is Ready afterwards.
func upgradeRestoresVGPUPool(t *testing.T, cluster, kubeconfig string, machines []string, guest kubernetes.Interface) {
	t.Helper()
	args := []string{"--upgrade", "--cluster-name", cluster, "--namespace", vmNamespace, "--guest-kubeconfig", kubeconfig, "-o", "json"}
	var res struct {
		Refused string `json:"upgradeRefused"`
		VMs     []struct {
			VM, Action string
			Restored   bool
		} `json:"vms"`
		Losses []json.RawMessage `json:"losses"`
	}
	out, code := runMaintenanceCheck(t, args...)
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const refusal = "There are non-live migratable VMs that need to be shut off before initiating the upgrade: "
	if code != 1 || !strings.HasPrefix(res.Refused, refusal) {
		t.Errorf("upgrade without restoreVM: exit %d, want 1 and Harvester's refusal\n%s", code, out)
	}
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	// Harvester's own webhook refuses the simulator's Upgrade alike.
	refused, err := exec.CommandContext(testContext(t), bin, "upgrade", "--state-dir", env.sim.Dir, "--timeout", "90s").CombinedOutput()
	if err == nil || !strings.Contains(string(refused), refusal) {
		t.Errorf("harvester-sim upgrade without --restore-vm: %v, want Harvester's webhook to refuse it with %q\n%s", err, refusal, refused)
	}
	for _, m := range machines {
		if !strings.Contains(string(refused), vmNamespace+"/"+m) {
			t.Errorf("harvester-sim upgrade without --restore-vm: the refusal does not name %s/%s\n%s", vmNamespace, m, refused)
		}
	}
	res.VMs, res.Losses, res.Refused = nil, nil, ""
	out, code = runMaintenanceCheck(t, append(args, "--restore-vm")...)
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	predicted := map[string]bool{}
	for _, v := range res.VMs {
		if v.Action != "shut down" || !v.Restored {
			t.Errorf("upgrade --restore-vm: %+v, want shut down and restored", v)
		}
		predicted[vmNamespace+"/"+v.VM] = true
	}
	if code != 0 || len(res.Losses) != 0 || res.Refused != "" || len(predicted) != len(machines) {
		t.Errorf("upgrade --restore-vm: exit %d, want 0, every machine, no loss\n%s", code, out)
	}
	report, err := exec.CommandContext(testContext(t), bin, "upgrade", "--state-dir", env.sim.Dir, "--timeout", "90s", "--restore-vm").CombinedOutput()
	t.Logf("harvester-sim upgrade --restore-vm:\n%s", report)
	if err != nil {
		t.Fatalf("harvester-sim upgrade --restore-vm: %v", err)
	}
	for _, what := range []string{"shut down", "restored"} {
		got := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^\s*`+what+`\s+(\S+)\s*$`).FindAllStringSubmatch(string(report), -1) {
			got[m[1]] = true
		}
		if !maps.Equal(got, predicted) {
			t.Errorf("harvester-sim upgrade %s %v, maintenance-check predicted %v", what, got, predicted)
		}
	}
	poll(t, "every guest node Ready after the upgrade", func(ctx context.Context) (bool, string) {
		var notReady []string
		for _, name := range machines {
			n, err := guest.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !nodeReady(n) {
				notReady = append(notReady, name+" ("+vmiState(ctx, name)+")")
			}
		}
		return len(notReady) == 0, fmt.Sprintf("not Ready: %v", notReady)
	})
}

// vmiState says where a machine's VMI is, for a wait's failure message.
// It outlives ctx's end: the wait's context may be over.
func vmiState(ctx context.Context, name string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	vmi, err := env.virt.KubevirtV1().VirtualMachineInstances(vmNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "VMI: " + err.Error()
	}
	ready := "unknown"
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceReady {
			ready = string(c.Status)
		}
	}
	return fmt.Sprintf("VMI %s on %s, Ready %s", vmi.Status.Phase, vmi.Status.NodeName, ready)
}
