package sim_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// simCLI runs bin/harvester-sim with args and returns its combined output.
func simCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func faultCLI(t *testing.T, args ...string) {
	t.Helper()
	if out, err := simCLI(t, append([]string{"fault", "--state-dir", simulator.Dir}, args...)...); err != nil {
		t.Fatalf("harvester-sim fault %v: %v\n%s", args, err, out)
	}
}

// reject-create and clear return only once they are in effect, so the very
// next create is refused, and after clear accepted.
func TestFaultRejectCreate(t *testing.T) {
	ctx := testContext(t)
	nads := dyn.Resource(nadGVR).Namespace("default")
	nad := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
			"metadata": map[string]any{"generateName": "fault-probe-"},
			"spec":     map[string]any{"config": "{}"},
		}}
	}
	faultCLI(t, "reject-create", "network-attachment-definitions.k8s.cni.cncf.io")
	t.Cleanup(func() { faultCLI(t, "clear") })
	_, err := nads.Create(ctx, nad(), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "harvester-sim fault: creates of network-attachment-definitions.k8s.cni.cncf.io are rejected") {
		t.Fatalf("create right after reject-create: %v, want the fault's rejection", err)
	}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "other-kind-"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("creates of another kind rejected too: %v", err)
	}
	faultCLI(t, "clear")
	created, err := nads.Create(ctx, nad(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create right after clear: %v", err)
	}
	_ = nads.Delete(ctx, created.GetName(), metav1.DeleteOptions{})
}

func TestFaultVMPatternsEditConfigMap(t *testing.T) {
	ctx := testContext(t)
	faultCLI(t, "stuck-scheduling", "default/pool-a-*")
	faultCLI(t, "no-ip", "default/quiet")
	faultCLI(t, "no-ip", "default/loud")
	faultCLI(t, "no-ip", "--remove", "default/loud")
	cm, err := kube.CoreV1().ConfigMaps("harvester-system").Get(ctx, "harvester-sim-faults", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["stuck-scheduling"] != "default/pool-a-*" || cm.Data["no-ip"] != "default/quiet" {
		t.Errorf("faults config map = %v", cm.Data)
	}
	faultCLI(t, "clear")
	if _, err := kube.CoreV1().ConfigMaps("harvester-system").Get(ctx, "harvester-sim-faults", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("clear left the faults config map: %v", err)
	}
	out, err := simCLI(t, "fault", "--state-dir", simulator.Dir, "no-ip", "no-namespace")
	if err == nil || !strings.Contains(out, "NAMESPACE/NAME") {
		t.Errorf("bad pattern accepted: %v %s", err, out)
	}
}

// After a kube-apiserver restart the data is still there and clients reconnect.
func TestFaultRestartAPIServer(t *testing.T) {
	ctx := testContext(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survives-restart"}, Data: map[string]string{"k": "v"}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps("default").Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	pidFile := filepath.Join(simulator.Dir, "apiserver.pid")
	before, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	faultCLI(t, "restart-apiserver") // returns once a new kube-apiserver serves
	ctx = testContext(t)             // the restart and the clients' back-off may have used most of the first minute
	after, err := os.ReadFile(pidFile)
	if err != nil || string(after) == string(before) {
		t.Fatalf("kube-apiserver pid %q -> %q (%v): not restarted", before, after, err)
	}
	got, err := kube.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("apiserver not serving after restart: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("data lost across restart: %v", got.Data)
	}
	checkVirtControllerLeads(t, time.Now())
	// Harvester's API server too: its controllers' finalizers need it.
	checkLeads(t, time.Now(), "harvester", "kube-system", "harvester-controllers")

	// The simulated controllers reconnect: a VM created now still runs, and
	// Harvester's VM mutator (configuration in etcd, harvester-webhook
	// reconnected) still mutates it. The VM has a CPU topology: Harvester's
	// own patch does not apply to a VM without domain.cpu.
	vms := dyn.Resource(vmGVR).Namespace("default")
	vm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "after-restart"},
		"spec": map[string]any{"runStrategy": "Always", "template": map[string]any{"spec": map[string]any{
			"domain": map[string]any{"cpu": map[string]any{"cores": 1}, "devices": map[string]any{},
				"resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "1Gi"}}},
		}}},
	}}
	created, err := vms.Create(ctx, vm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vms.Delete(context.Background(), "after-restart", metav1.DeleteOptions{}) })
	mem, _, _ := unstructured.NestedString(created.Object, "spec", "template", "spec", "domain", "resources", "requests", "memory")
	guest, _, _ := unstructured.NestedString(created.Object, "spec", "template", "spec", "domain", "memory", "guest")
	if mem != "682Mi" || guest != "1Gi" {
		t.Errorf("VM created after the restart: requests.memory %q, guest %q; want Harvester's 682Mi (1Gi/150%%, in MiB) and 1Gi", mem, guest)
	}
	err = simtest.WaitObject(ctx, dyn, vmiGVR, "default", "after-restart", func(u *unstructured.Unstructured) bool {
		if u == nil {
			return false
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "Running"
	})
	if err != nil {
		t.Fatalf("VM created after the restart never ran: %v", err)
	}
}

// freeze-apiserver returns once kube-apiserver is stopped: calls hang (a
// short deadline expires) until the simulator continues it after DURATION.
func TestFaultFreezeAPIServer(t *testing.T) {
	for _, bad := range []string{"0s", "-1s", "11m", "soon"} {
		if out, err := simCLI(t, "fault", "--state-dir", simulator.Dir, "freeze-apiserver", bad); err == nil || !strings.Contains(out, "DURATION") {
			t.Errorf("freeze-apiserver %s: %v %s, want a DURATION error", bad, err, out)
		}
	}
	start := time.Now()
	faultCLI(t, "freeze-apiserver", "4s")
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := kube.CoreV1().Namespaces().Get(short, "default", metav1.GetOptions{}); err == nil {
		t.Fatal("a call while kube-apiserver is frozen was answered")
	}
	ctx := testContext(t)
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("kube-apiserver not continued after the freeze: %v", err)
	}
	if waited := time.Since(start); waited < 3*time.Second {
		t.Errorf("answered %s after the freeze began, before its 4s were over", waited)
	}
}
