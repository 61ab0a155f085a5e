package driver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var imageAndNet = []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1"}

// haltedVM is a stopped VM a user makes by hand in the test namespace, with
// what Harvester's webhook wants of any VM: a guest memory or a memory limit
// (its validator: "either memory.guest or resources.limits.memory must be
// set") and a CPU topology, as every VM Harvester's UI makes.
func haltedVM(name string) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	guest := resource.MustParse("1Gi")
	spec := kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
		CPU: &kubevirtv1.CPU{Cores: 1}, Memory: &kubevirtv1.Memory{Guest: &guest}}}
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: &halted, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: spec}},
	}
}

// machineObjects are the UIDs of a machine's VM, root disk and Secret.
type machineObjects struct{ vm, disk, secret types.UID }

func objectsOf(t *testing.T, name string) machineObjects {
	t.Helper()
	disk, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), name+"-disk-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("root disk of %s: %v", name, err)
	}
	return machineObjects{getVM(t, name).UID, disk.UID, getSecret(t, name+"-cloudinit").UID}
}

// assertSame fails unless the VM, root disk and Secret are the same objects.
func assertSame(t *testing.T, name string, want machineObjects, why string) {
	t.Helper()
	if got := objectsOf(t, name); got != want {
		t.Errorf("%s: objects of %s changed: %+v, want %+v", why, name, got, want)
	}
}

func mustFail(t *testing.T, out string, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("command succeeded:\n%s", out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// storedKubeconfig returns the credential in the machine's config.json.
func storedKubeconfig(t *testing.T, r *rm, name string) string {
	t.Helper()
	var host struct {
		Driver struct{ KubeconfigContent string }
	}
	readMachineConfig(t, r, name, &host)
	return host.Driver.KubeconfigContent
}

func deleteVMAndWait(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := virt.KubevirtV1().VirtualMachines(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := virt.KubevirtV1().VirtualMachines(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Deleted {
			return
		}
	}
	t.Fatalf("VM %s not deleted", name)
}

// TestOwnershipRmLeavesOthersVM (issue 7 case 1): a machine whose create
// lost (it failed before its VM existed) and a machine whose VM was
// replaced by a user's own VM of the same name both refuse to touch what is
// there now, saying why.
//
// Sequential: fault reject-create refuses every test's VM creates (and
// clear ends every fault).
func TestOwnershipRmLeavesOthersVM(t *testing.T) {
	const cluster = "e2e-own"
	name := "e2e-own-pool1-o0000"

	// The loser: its create fails after pre-create (its state is saved),
	// before its VM exists.
	simFault(t, fault.RejectCreate, "virtualmachines.kubevirt.io")
	loser := newRM(t, cluster)
	out, err := loser.create(name, imageAndNet...)
	simFault(t, fault.ClearAll)
	mustFail(t, out, err, "create VM")

	// The winner creates the same name.
	winner := newRM(t, cluster)
	winner.mustCreate(name, imageAndNet...)
	want := objectsOf(t, name)

	for _, cmd := range [][]string{{"rm", "-y", "--update-config", name}, {"rm", "-y", name}, {"stop", name}, {"kill", name}} {
		out, err := loser.run(cmd...)
		mustFail(t, out, err, "VM default/"+name+" exists but it carries node-driver.harvester-kit.io/machine-id=", "another machine's",
			"it was not created by this machine, so the driver left it untouched")
	}
	assertSame(t, name, want, "loser's commands")
	if s := status(t, winner, name); s != "Running" {
		t.Errorf("winner's machine is %q after the loser's commands", s)
	}

	// The winner's VM is deleted by hand and a user makes their own VM of
	// the name: the winner's rm leaves it (and, changing nothing, the
	// winner's disk) alone.
	deleteVMAndWait(t, name)
	usersVM, err := virt.KubevirtV1().VirtualMachines(namespace).Create(context.Background(), haltedVM(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err = winner.run("rm", "-y", "--update-config", name)
	mustFail(t, out, err, "VM default/"+name+" exists but it has no node-driver.harvester-kit.io/machine-id label")
	if vm := getVM(t, name); vm.UID != usersVM.UID {
		t.Errorf("the user's VM was replaced")
	}
	if !pvcExists(t, name+"-disk-0") {
		t.Errorf("the refused rm still deleted the machine's disk")
	}

	// Once the user's VM is gone, the winner's rm removes its disk and
	// Secret; the loser's rm removes nothing and succeeds.
	deleteVMAndWait(t, name)
	winner.mustRun("rm", "-y", "--update-config", name)
	waitPVCGone(t, name+"-disk-0")
	out = loser.mustRun("rm", "-y", "--update-config", name)
	if !strings.Contains(out, "removed nothing") {
		t.Errorf("loser's rm does not say it removed nothing:\n%s", out)
	}
}

// TestOwnershipOtherClusterCredential (issue 7 case 2): with a credential
// for another Harvester cluster every command says so and changes nothing
// (rm does not report success); read-only commands do not store the
// credential of the environment; Rancher's rm with and without
// --update-config works with a rotated credential.
func TestOwnershipOtherClusterCredential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	other, err := simtest.Start(ctx, simtest.Options{})
	if err != nil {
		t.Fatalf("start a second simulator: %v", err)
	}
	t.Logf("second simulator ready in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _ = other.Stop() })
	otherKC, err := os.ReadFile(other.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	otherEnv := []string{"HARVESTER_KUBECONFIG_CONTENT=" + b64(string(otherKC))}

	r := newRM(t, "e2e-twin")
	name := "e2e-twin-pool1-c0000"
	r.mustCreate(name, imageAndNet...)
	want := objectsOf(t, name)
	stored := storedKubeconfig(t, r, name)

	// (`restart` is left out: when the state cannot be read rancher-machine
	// skips the driver's Restart and waits 3 minutes for SSH; the driver's
	// refusal is unit-tested.)
	for _, cmd := range [][]string{
		{"status", name}, {"ip", name}, {"url", name}, {"stop", name}, {"kill", name},
		{"rm", "-y", name}, {"rm", "-y", "--update-config", name},
	} {
		out, err := r.runEnv(otherEnv, cmd...)
		mustFail(t, out, err, "the credential points at a different Harvester cluster than the one this machine was created on",
			"nothing was changed")
		if strings.Contains(out, "Successfully removed") {
			t.Errorf("%v reported success:\n%s", cmd, out)
		}
		if got := storedKubeconfig(t, r, name); got != stored {
			t.Errorf("%v replaced the stored credential", cmd)
		}
	}
	assertSame(t, name, want, "commands with another cluster's credential")
	if s := status(t, r, name); s != "Running" {
		t.Errorf("machine is %q after the refused commands", s)
	}

	// Rotated credential: the stored one is now rejected. Read-only
	// commands use the environment's without storing it; rm without
	// --update-config (older Rancher) works.
	setStoredKubeconfig(t, r, name, rejectedKubeconfig(t))
	if s := status(t, r, name); s != "Running" {
		t.Errorf("status with the fresh credential: %q", s)
	}
	r.stdout("ip", name)
	if got := storedKubeconfig(t, r, name); got != rejectedKubeconfig(t) {
		t.Errorf("status/ip without --update-config stored the environment's credential")
	}
	r.mustRun("rm", "-y", name)
}

// TestOwnershipHandDeletedVMLeavesNoDisk (issue 7 case 3): after the VM is
// deleted by hand, a new create of the name is refused while the old disk
// exists, rm removes the disk (found by its label), and a new machine of
// the name gets a new disk.
func TestOwnershipHandDeletedVMLeavesNoDisk(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-gone")
	name := "e2e-gone-pool1-a1b2c"
	r.mustCreate(name, append(imageAndNet, "--harvester-disk-size=12")...)
	old := objectsOf(t, name)
	// Drop the owner reference so the garbage collector cannot help.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := getSecret(t, name+"-cloudinit")
		s.OwnerReferences = nil
		_, err := kube.CoreV1().Secrets(namespace).Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	deleteVMAndWait(t, name)

	again := newRM(t, "e2e-gone")
	out, err := again.create(name, imageAndNet...)
	mustFail(t, out, err, "a volume (PVC) named "+name+"-disk-0 already exists")

	out = r.mustRun("rm", "-y", "--update-config", name)
	if !strings.Contains(out, "removed volumes "+name+"-disk-0; Secret "+name+"-cloudinit") {
		t.Errorf("rm does not say what it removed:\n%s", out)
	}
	if pvcExists(t, name+"-disk-0") {
		t.Fatalf("the root disk survived rm")
	}

	again.mustCreate(name, imageAndNet...)
	if now := objectsOf(t, name); now.disk == old.disk {
		t.Errorf("the new machine boots the old disk %s", old.disk)
	}
	again.mustRun("rm", "-y", "--update-config", name)
}

// TestOwnershipCreateStopsWhenVMDeleted (issue 7 case 5): a create whose VM
// is deleted while it waits stops at once with a clear error (not after the
// 600 s wait timeout: the command would be killed after 4 minutes) and
// leaves nothing.
//
// Sequential: fault stuck-scheduling rewrites the admission policy every
// launcher Pod's binding passes.
func TestOwnershipCreateStopsWhenVMDeleted(t *testing.T) {
	name := "e2e-vanish-pool1-v0000"
	simFault(t, fault.StuckScheduling, namespace+"/e2e-vanish-*")
	t.Cleanup(func() { simFault(t, fault.StuckScheduling, "--remove", namespace+"/e2e-vanish-*") })
	r := newRM(t, "e2e-vanish")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	deleted := make(chan error, 1)
	go func() { deleted <- deleteWhenScheduling(ctx, name) }()
	out, err := r.create(name, append(imageAndNet, "--harvester-wait-timeout=600")...)
	if derr := <-deleted; derr != nil {
		t.Fatalf("delete the VM while create waits: %v", derr)
	}
	mustFail(t, out, err, "VM default/"+name+": the VM was deleted by someone else while waiting for it to run and report an address")
	if strings.Contains(out, "timed out") {
		t.Errorf("create waited for the timeout:\n%s", out)
	}
}

// deleteWhenScheduling deletes the VM once its VMI is seen Scheduling.
func deleteWhenScheduling(ctx context.Context, name string) error {
	w, err := virt.KubevirtV1().VirtualMachineInstances(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if vmi, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance); ok && vmi.Status.Phase == kubevirtv1.Scheduling {
			return virt.KubevirtV1().VirtualMachines(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	return ctx.Err()
}

// TestOwnershipFailedRestartRestoresRunStrategy (issue 7 case 6): a restart
// that times out puts the run strategy back.
//
// Sequential: fault stuck-scheduling rewrites the admission policy every
// launcher Pod's binding passes.
func TestOwnershipFailedRestartRestoresRunStrategy(t *testing.T) {
	name := "e2e-restart-pool1-s0000"
	r := newRM(t, "e2e-restart")
	r.mustCreate(name, imageAndNet...)
	storedWait := setStoredDriverField(t, r, name, "WaitTimeoutSeconds", 8)
	simFault(t, fault.StuckScheduling, namespace+"/e2e-restart-*")
	t.Cleanup(func() { simFault(t, fault.StuckScheduling, "--remove", namespace+"/e2e-restart-*") })

	out, err := r.run("restart", name)
	mustFail(t, out, err, "timed out after 8s waiting for VM default/"+name+" to run again with a new instance")
	vm := getVM(t, name)
	if vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy != kubevirtv1.RunStrategyRerunOnFailure {
		t.Errorf("run strategy after the failed restart: %v, want RerunOnFailure", vm.Spec.RunStrategy)
	}
	// The 8 s were for the restart; rm gets the machine's own wait again
	// (under load the VM and its Secret once took longer than 8 s to go).
	setStoredDriverField(t, r, name, "WaitTimeoutSeconds", storedWait)
	r.mustRun("rm", "-y", "--update-config", name)
}

// rejectedKubeconfig is the admin kubeconfig with a token the API server
// rejects (an expired or rotated credential).
func rejectedKubeconfig(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.Token = nil, nil, "expired-token"
	}
	bad, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(bad)
}

// setStoredKubeconfig replaces the credential in the machine's config.json.
func setStoredKubeconfig(t *testing.T, r *rm, name, content string) {
	t.Helper()
	setStoredDriverField(t, r, name, "KubeconfigContent", content)
}

// setStoredDriverField sets one field of the driver in config.json and
// returns its previous value.
func setStoredDriverField(t *testing.T, r *rm, name, field string, value any) any {
	t.Helper()
	path := filepath.Join(r.store, "machines", name, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var host map[string]any
	if err := json.Unmarshal(raw, &host); err != nil {
		t.Fatal(err)
	}
	driver := host["Driver"].(map[string]any)
	old := driver[field]
	driver[field] = value
	raw, _ = json.Marshal(host)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return old
}
