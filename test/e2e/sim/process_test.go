package sim_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

func TestSecondSimulatorOnALiveStateDirIsRefused(t *testing.T) {
	out, err := simCLI(t, "--state-dir", simulator.Dir)
	if err == nil || !strings.Contains(out, "already running") {
		t.Fatalf("second simulator on a live dir: err=%v output:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(simulator.Dir, "ready")); err != nil {
		t.Errorf("the refused start disturbed the running simulator: %v", err)
	}
}

func TestInvalidOptionsAreAllReported(t *testing.T) {
	out, err := simCLI(t, "--state-dir", t.TempDir(), "--hosts", "0", "--zones", "5", "--boot-delay", "-1s")
	if err == nil {
		t.Fatal("invalid options accepted")
	}
	for _, want := range []string{"--hosts", "--zones", "--boot-delay"} {
		if !strings.Contains(out, want) {
			t.Errorf("error does not name %s:\n%s", want, out)
		}
	}
}

// SIGTERM stops every process the simulator started, and a second run on the
// same directory starts clean.
func TestStopLeavesNoProcessAndRestartStartsClean(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first := startSimIn(t, dir)
	ctx := testContext(t)
	client := clientFor(t, dir)
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-first-run"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(processesUsing(dir)); n != 8 {
		t.Errorf("want etcd, kube-apiserver, kube-controller-manager, kube-scheduler, virt-api, virt-controller, harvester-webhook and harvester running for %s, found %d", dir, n)
	}
	stopSim(t, first)
	if left := processesUsing(dir); len(left) > 0 {
		t.Fatalf("processes left after SIGTERM: %v", left)
	}
	for _, f := range []string{"ready", "sim.pid"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s left after stop: %v", f, err)
		}
	}

	second := startSimIn(t, dir)
	defer stopSim(t, second)
	// A fresh minute: the first one may have gone on the second start.
	_, err := clientFor(t, dir).CoreV1().ConfigMaps("default").Get(testContext(t), marker.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("second run did not start clean: marker lookup gave %v", err)
	}
}

func startSimIn(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	// The simulator's own bound on its start (2 minutes by default) is too
	// short on a slow 2-core machine with three other simulators busy: a
	// second start there once gave up waiting for virt-api after 2 minutes.
	// These starts get what the harness gives a package's simulator.
	const startTimeout = 6 * time.Minute
	cmd := exec.Command(bin, "--state-dir", dir, "--start-timeout="+startTimeout.String())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(startTimeout + 10*time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			return cmd
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("simulator in %s not ready within %s", dir, startTimeout)
		}
		if exited(cmd.Process.Pid) {
			t.Fatalf("simulator in %s exited before it was ready: %v", dir, cmd.Wait())
		}
		time.Sleep(50 * time.Millisecond) // a file appearing; nothing to watch
	}
}

// exited: the child pid has ended (a zombie until it is waited for).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(string(stat[i+1:]), " ") || strings.HasPrefix(string(stat[i+1:]), " Z")
}

func stopSim(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("simulator exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("simulator did not stop within 30s of SIGTERM")
	}
}

func clientFor(t *testing.T, dir string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// processesUsing lists the command lines of processes whose arguments name dir.
func processesUsing(dir string) []string {
	var found []string
	for _, p := range childrenUsing(dir) {
		found = append(found, strings.Join(p.args, " "))
	}
	return found
}

// child is a process the simulator started.
type child struct {
	pid  string
	args []string
}

// childrenUsing are the processes whose arguments name dir, but for
// harvester-sim itself.
func childrenUsing(dir string) []child {
	var found []child
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if strings.HasSuffix(args[0], "harvester-sim") {
			continue
		}
		if strings.Contains(string(data), dir+"/") {
			found = append(found, child{e.Name(), args})
		}
	}
	return found
}

// TestChildrenRunWithGOGC200: the simulator runs its processes with
// GOGC=200 when the environment sets none (half as many collections on
// two shared cores), and leaves a GOGC that is set alone.
func TestChildrenRunWithGOGC200(t *testing.T) {
	want := "GOGC=200"
	if v, set := os.LookupEnv("GOGC"); set {
		want = "GOGC=" + v
	}
	children := childrenUsing(simulator.Dir)
	if len(children) < 5 {
		t.Fatalf("found %d of the simulator's processes, want its control plane, KubeVirt's and Harvester's", len(children))
	}
	for _, c := range children {
		env, err := os.ReadFile(filepath.Join("/proc", c.pid, "environ"))
		if err != nil {
			continue // gone since listed
		}
		if !slices.Contains(strings.Split(string(env), "\x00"), want) {
			t.Errorf("%s runs without %s", filepath.Base(c.args[0]), want)
		}
	}
}
