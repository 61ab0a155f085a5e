package driver_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestOrphanedVMI (issue 24 case 2): a VM deleted by hand with
// `kubectl delete vm --cascade=orphan` leaves its VM instance running. A
// new machine of that name fails its create at once, saying a VM instance
// holds the name and whose it is; rm of the machine the instance belongs
// to removes it (and everything else), releasing the finalizer Harvester's
// handler would hold it by for ever; the name can then be used again.
func TestOrphanedVMI(t *testing.T) {
	t.Parallel()
	const cluster = "e2e-orphan"
	name := cluster + "-pool1-o0000"
	old := newRM(t, cluster)
	old.mustCreate(name, imageAndNet...)
	vmi := getVMI(t, name)
	machineID := vmi.Labels["node-driver.harvester-kit.io/machine-id"]
	if machineID == "" {
		t.Fatalf("the VM instance carries no machine ID: %v", vmi.Labels)
	}

	// kubectl delete vm --cascade=orphan
	orphan := metav1.DeletePropagationOrphan
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := virt.KubevirtV1().VirtualMachines(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	waitObject(t, vmKind(), name, func(vm *kubevirtv1.VirtualMachine) bool { return vm == nil })
	// Harvester's VMI handler BackfillObservedNetworkMacAddress (register.go
	// of pkg/controller/master/virtualmachine) holds the instance with
	// wrangler's finalizer of its name; its handler fails while the VM is
	// gone.
	const backfill = "wrangler.cattle.io/VMController.BackfillObservedNetworkMacAddress"
	waitObject(t, vmiKind(), name, func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v != nil && v.UID == vmi.UID && metav1.GetControllerOf(v) == nil
	})
	if f := getVMI(t, name).Finalizers; !slices.Contains(f, backfill) {
		t.Errorf("the orphaned VM instance lacks Harvester's finalizer %s: %v", backfill, f)
	}

	fresh := newRM(t, cluster)
	start := time.Now()
	out, err := fresh.create(name, imageAndNet...)
	mustFail(t, out, err, "a VM instance (VMI) default/"+name+" already exists and holds the machine's name",
		"it belongs to no VM (a VM deleted with --cascade=orphan leaves its instance running)",
		"made by the machine with node-driver.harvester-kit.io/machine-id="+machineID+" of guest cluster "+cluster)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the create took %s to fail: it waited instead of saying so", took)
	}
	if got := getVMI(t, name); got.UID != vmi.UID {
		t.Errorf("the VM instance was replaced (UID %s, was %s)", got.UID, vmi.UID)
	}
	if ls := fresh.stdout("ls", "-q"); strings.Contains(ls, name) {
		fresh.mustRun("rm", "-y", "-f", name)
	}

	out = old.mustRun("rm", "-y", "--update-config", name)
	if !strings.Contains(out, "deleting VM instance default/"+name) {
		t.Errorf("rm did not say it deleted the VM instance:\n%s", out)
	}
	if !strings.Contains(out, "releasing Harvester's finalizer "+backfill+" of VM instance default/"+name+" (UID "+string(vmi.UID)+")") {
		t.Errorf("rm did not say it released Harvester's finalizer:\n%s", out)
	}
	waitObject(t, vmiKind(), name, func(v *kubevirtv1.VirtualMachineInstance) bool { return v == nil })
	old.assertNothingLeft()

	fresh.mustCreate(name, imageAndNet...)
	fresh.mustRun("rm", "-y", "--update-config", name)
}
