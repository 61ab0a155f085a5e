package driver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

const (
	namespace     = "default"
	labelCluster  = "guestcluster.harvesterhci.io/name"
	labelCreator  = "harvesterhci.io/creator"
	creatorValue  = "docker-machine-driver-harvester"
	installMarker = "echo e2e-install-marker"
)

// rm is a rancher-machine environment for one test: its own store, the
// binaries in bin/ first on PATH, credentials in the environment.
type rm struct {
	t       *testing.T
	store   string
	script  string
	cluster string
	env     []string
	// limit is the longest command limit given so far: a machine's
	// --harvester-wait-timeout is stored and applies to its later
	// commands (rm) too.
	limit time.Duration
}

// newRM prepares a store and an install script, and registers the check
// that nothing labelled with the test's cluster is left at the end.
func newRM(t *testing.T, cluster string) *rm {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "install.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+installMarker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &rm{t: t, store: filepath.Join(dir, "store"), script: script, cluster: cluster}
	r.env = append(os.Environ(),
		"TMPDIR="+dir, // rancher-machine's merged user data, never removed by it
		"MACHINE_STORAGE_PATH="+r.store,
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HARVESTER_KUBECONFIG_CONTENT="+base64.StdEncoding.EncodeToString([]byte(kubeconfig)),
	)
	t.Cleanup(func() {
		r.assertNothingLeft()
		simtest.NoPluginLeft(t, r.store)
	})
	return r
}

// run runs rancher-machine with args and returns combined output.
func (r *rm) run(args ...string) (string, error) {
	r.t.Helper()
	return r.runEnv(nil, args...)
}

func (r *rm) runEnv(extraEnv []string, args ...string) (string, error) {
	r.t.Helper()
	r.limit = max(r.limit, commandLimit(args))
	ctx, cancel := context.WithTimeout(context.Background(), r.limit)
	defer cancel()
	return r.runCtx(ctx, extraEnv, args...)
}

// commandLimit is how long a rancher-machine command may run before the
// test kills it: 4 minutes, or 2 more than the last
// --harvester-wait-timeout given, so a command is never killed before the
// driver's own timeout (runEnv keeps the longest a store was given).
func commandLimit(args []string) time.Duration {
	limit := 4 * time.Minute
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--harvester-wait-timeout="); ok {
			if sec, err := strconv.Atoi(v); err == nil {
				limit = max(4*time.Minute, time.Duration(sec)*time.Second+2*time.Minute)
			}
		}
	}
	return limit
}

// runCtx runs rancher-machine until it ends or ctx does.
func (r *rm) runCtx(ctx context.Context, extraEnv []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "rancher-machine"), args...)
	cmd.Env = append(append([]string{}, r.env...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// saveMachine copies a machine's store directory, to run a command twice.
func (r *rm) saveMachine(name string) func() {
	r.t.Helper()
	src := filepath.Join(r.store, "machines", name)
	dst := filepath.Join(r.t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		r.t.Fatal(err)
	}
	return func() {
		if err := os.CopyFS(src, os.DirFS(dst)); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *rm) mustRun(args ...string) string {
	r.t.Helper()
	out, err := r.run(args...)
	if err != nil {
		r.t.Fatalf("rancher-machine %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// create runs `create` the way Rancher does, plus extra driver flags.
func (r *rm) create(name string, extra ...string) (string, error) {
	r.t.Helper()
	return r.createEnv(nil, name, extra...)
}

// createEnv is create with extra environment variables.
func (r *rm) createEnv(env []string, name string, extra ...string) (string, error) {
	r.t.Helper()
	return r.runEnv(env, r.createArgs(name, extra...)...)
}

// createArgs are the arguments of create: Rancher's, then extra (a flag
// given twice takes the later value).
func (r *rm) createArgs(name string, extra ...string) []string {
	args := []string{"create", "-d", "harvester",
		"--custom-install-script=" + r.script,
		"--harvester-cluster-name=" + r.cluster,
		"--harvester-ssh-user=ubuntu",
		"--harvester-wait-timeout=120",
	}
	args = append(args, extra...)
	return append(args, name)
}

func (r *rm) mustCreate(name string, extra ...string) string {
	r.t.Helper()
	out, err := r.create(name, extra...)
	if err != nil {
		r.t.Fatalf("create %s: %v\n%s", name, err, out)
	}
	return out
}

// assertNothingLeft fails the test if any VM, VMI, Secret or PVC labelled
// with the test's cluster remains. After a failed test it first removes
// what is left (through the admin API) so later tests start clean.
func (r *rm) assertNothingLeft() {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: labelCluster + "=" + r.cluster}
	var left []string
	vms, err := virt.KubevirtV1().VirtualMachines(namespace).List(ctx, sel)
	if err != nil {
		t.Errorf("list VMs: %v", err)
		return
	}
	for _, v := range vms.Items {
		left = append(left, "VM "+v.Name)
	}
	vmis, err := virt.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, sel)
	if err != nil {
		t.Errorf("list VMIs: %v", err)
		return
	}
	for _, v := range vmis.Items {
		left = append(left, "VMI "+v.Name)
	}
	secrets, err := kube.CoreV1().Secrets(namespace).List(ctx, sel)
	if err != nil {
		t.Errorf("list Secrets: %v", err)
		return
	}
	for _, s := range secrets.Items {
		left = append(left, "Secret "+s.Name)
	}
	pvcs, err := kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, sel)
	if err != nil {
		t.Errorf("list PVCs: %v", err)
		return
	}
	for _, p := range pvcs.Items {
		left = append(left, "PVC "+p.Name)
	}
	if len(left) == 0 {
		return
	}
	t.Errorf("left behind for cluster %s: %s", r.cluster, strings.Join(left, ", "))
	for _, v := range vms.Items {
		_ = virt.KubevirtV1().VirtualMachines(namespace).Delete(ctx, v.Name, metav1.DeleteOptions{})
	}
	for _, s := range secrets.Items {
		_ = kube.CoreV1().Secrets(namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
	}
	for _, p := range pvcs.Items {
		_ = kube.CoreV1().PersistentVolumeClaims(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	}
}

func getVM(t *testing.T, name string) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := virt.KubevirtV1().VirtualMachines(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get VM %s: %v", name, err)
	}
	return vm
}

func getVMI(t *testing.T, name string) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	vmi, err := virt.KubevirtV1().VirtualMachineInstances(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get VMI %s: %v", name, err)
	}
	return vmi
}

func getSecret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s, err := kube.CoreV1().Secrets(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Secret %s: %v", name, err)
	}
	return s
}

// stdoutStderr runs rancher-machine and returns its standard output and
// standard error apart.
func (r *rm) stdoutStderr(args ...string) (string, string, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "rancher-machine"), args...)
	cmd.Env = r.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// stdout runs rancher-machine and returns only its standard output, the
// plugin's progress lines ("(<machine>) ...") dropped.
func (r *rm) stdout(args ...string) string {
	r.t.Helper()
	out, errOut, err := r.stdoutStderr(args...)
	if err != nil {
		r.t.Fatalf("rancher-machine %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "(") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func status(t *testing.T, r *rm, name string) string {
	t.Helper()
	return r.stdout("status", name)
}
