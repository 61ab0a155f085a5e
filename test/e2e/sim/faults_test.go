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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

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

func TestFaultRejectCreate(t *testing.T) {
	ctx := testContext(t)
	faultCLI(t, "reject-create", "persistentvolumeclaims")
	t.Cleanup(func() { faultCLI(t, "clear") })
	pvc := func(prefix string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
		}}
	}
	// Admission policies reach the apiserver's policy cache asynchronously,
	// and there is nothing to watch for that: retry until the create fails.
	var rejected error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var probe *corev1.PersistentVolumeClaim
		probe, rejected = kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc("reject-probe-"), metav1.CreateOptions{})
		if rejected == nil {
			_ = kube.CoreV1().PersistentVolumeClaims("default").Delete(ctx, probe.Name, metav1.DeleteOptions{})
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("creates were never rejected: %v", err)
	}
	if !strings.Contains(rejected.Error(), "harvester-sim fault: creates of persistentvolumeclaims are rejected") {
		t.Errorf("rejection %v does not name the fault", rejected)
	}
	faultCLI(t, "clear")
	var created *corev1.PersistentVolumeClaim
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc("after-clear-"), metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("creates still rejected after clear: %v", err)
	}
	_ = kube.CoreV1().PersistentVolumeClaims("default").Delete(ctx, created.Name, metav1.DeleteOptions{})
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
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
