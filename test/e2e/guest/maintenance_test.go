package guest

import (
	"encoding/json"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// TestMaintenanceCheckGuestQuorum: a K3s pool of three vGPU machines, one
// per host (each host offers one vGPU of the profile); every simulated
// guest node is a server (control-plane and etcd labels). With
// --guest-kubeconfig maintenance-check takes the roles from the guest's
// nodes: forced maintenance of two hosts stops two of three etcd members,
// and etcd needs a majority (2 of 3) up: quorum lost, exit 1. One host:
// one of three down, etcd keeps its quorum, exit 0. Then the upgrade, with
// and without the restore-VM option (upgradeRestoresVGPUPool).
func TestMaintenanceCheckGuestQuorum(t *testing.T) {
	const cluster = "mnt-quorum"
	const profile = "nvidia.com/GRID_A100-4C"
	hosts := []string{"harvester-node-0", "harvester-node-1", "harvester-node-2"}
	for _, h := range hosts {
		setHostAllocatable(t, h, profile, "1")
	}
	_, machines := createPool(t, cluster, 3, "--harvester-cloud-provider=k3s",
		`--harvester-vgpu-info={"vGPURequests":[{"name":"gpu1","deviceName":"`+profile+`"}]}`)
	guest, _ := guestClients(t, cluster)
	checkNodesJoined(t, guest, machines)
	ccmInit(t, guest) // --guest-kubeconfig is taken only once a node's providerID names its VM
	on := map[string]string{}
	for _, m := range machines {
		vmi, err := env.virt.KubevirtV1().VirtualMachineInstances(vmNamespace).Get(testContext(t), m, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		on[m] = vmi.Status.NodeName
	}
	kubeconfig := filepath.Join(env.sim.Dir, "guests", cluster, "kubeconfig")
	args := []string{"--force", "--cluster-name", cluster, "--namespace", vmNamespace, "--guest-kubeconfig", kubeconfig, "-o", "json"}

	type loss struct {
		Group   string `json:"group"`
		Members int    `json:"members"`
		Down    int    `json:"down"`
		Certain bool   `json:"certain"`
	}
	var res struct {
		VMs []struct {
			VM, Action, Reason string
		} `json:"vms"`
		Losses []loss `json:"losses"`
	}
	out, code := runMaintenanceCheck(t, append(args, on[machines[0]], on[machines[1]])...)
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 1 || len(res.VMs) != 2 {
		t.Errorf("two hosts: exit %d, %s", code, out)
	}
	for _, v := range res.VMs {
		if v.Action != "shut down" || v.Reason != "HostDeviceNotLiveMigratable" {
			t.Errorf("two hosts: %+v", v)
		}
	}
	var etcd *loss
	for i, l := range res.Losses {
		if l.Group == "etcd" {
			etcd = &res.Losses[i]
		}
		if l.Group == "control plane" {
			t.Errorf("control plane lost with one of three servers up: %+v", l)
		}
	}
	if etcd == nil || *etcd != (loss{Group: "etcd", Members: 3, Down: 2, Certain: true}) {
		t.Errorf("two hosts: losses %+v, want etcd 2 of 3 down", res.Losses)
	}

	res.Losses = nil
	out, code = runMaintenanceCheck(t, append(args, on[machines[2]])...)
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 0 || len(res.Losses) != 0 {
		t.Errorf("one host: exit %d, %s", code, out)
	}
	upgradeRestoresVGPUPool(t, cluster, kubeconfig, machines, guest)
}

// runMaintenanceCheck runs bin/harvester-bootstrap maintenance-check (flags
// before the hosts) and returns its stdout and exit status.
func runMaintenanceCheck(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, stderr, code := maintenanceCheckStderr(t, args...)
	if code != 0 {
		t.Logf("maintenance-check %v: exit %d\n%s", args, code, stderr)
	}
	return out, code
}

// maintenanceCheckStderr runs maintenance-check (flags before the hosts)
// and returns its stdout, stderr and exit status.
func maintenanceCheckStderr(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code, err := simtest.RunBin(testContext(t), "harvester-bootstrap", append([]string{"maintenance-check", "--kubeconfig", env.sim.Kubeconfig}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return stdout, stderr, code
}

// setHostAllocatable sets a host's allocatable count of a device-plugin
// resource as its device plugin would, and takes it off after the test.
func setHostAllocatable(t *testing.T, node, res, value string) {
	t.Helper()
	patch := func(v any) {
		b, _ := json.Marshal(map[string]any{"status": map[string]any{"allocatable": map[string]any{res: v}}})
		if _, err := env.kube.CoreV1().Nodes().Patch(testContext(t), node, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	patch(value)
	t.Cleanup(func() { patch(nil) })
}
