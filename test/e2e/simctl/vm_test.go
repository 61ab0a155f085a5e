package simctl

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

func TestRunStrategyLifecycle(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "vm", vmOpts{strategy: kubevirtv1.RunStrategyHalted})
	// KubeVirt's VM controller and Harvester's act on the new VM each on its
	// own: wait for both.
	vm := waitVM(t, ns, "vm", "Stopped, with Harvester's finalizer", func(vm *kubevirtv1.VirtualMachine) bool {
		return printable(kubevirtv1.VirtualMachineStatusStopped)(vm) && hasFinalizer(vm.Finalizers)
	})
	if vm.Status.Created || vm.Status.Ready {
		t.Errorf("halted vm status created=%v ready=%v", vm.Status.Created, vm.Status.Ready)
	}
	if !hasFinalizer(vm.Finalizers) {
		t.Errorf("vm finalizers %v lack the PVC finalizer", vm.Finalizers)
	}

	patchVM(t, ns, "vm", map[string]any{"spec": map[string]any{"runStrategy": "RerunOnFailure"}})
	vmi := waitVMI(t, ns, "vm", "Running", running)
	ref := metav1.GetControllerOf(vmi)
	if ref == nil || ref.Kind != "VirtualMachine" || ref.Name != "vm" || ref.UID != vm.UID {
		t.Errorf("vmi controller reference = %+v, want the VM %s", ref, vm.UID)
	}
	vm = waitVM(t, ns, "vm", "Running and ready", func(vm *kubevirtv1.VirtualMachine) bool {
		return printable(kubevirtv1.VirtualMachineStatusRunning)(vm) && vm.Status.Ready && vm.Status.Created
	})
	if c := vmCond(vm, kubevirtv1.VirtualMachineReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("vm Ready condition = %+v", c)
	}

	// Restart: under Always, deleting the VMI makes a new one (under
	// RerunOnFailure KubeVirt v1.7 does not: a VMI that is gone without a
	// start request is not re-created, pkg/virt-controller/watch/vm/vm.go).
	patchVM(t, ns, "vm", map[string]any{"spec": map[string]any{"runStrategy": "Always"}})
	firstUID := vmi.UID
	deleteObject(t, gvrVMI, ns, "vm")
	restarted := waitVMI(t, ns, "vm", "a new running VMI", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return running(v) && v.UID != firstUID
	})
	if restarted.UID == firstUID {
		t.Fatal("restart kept the VMI UID")
	}

	patchVM(t, ns, "vm", map[string]any{"spec": map[string]any{"runStrategy": "Halted"}})
	waitVMI(t, ns, "vm", "deleted", func(v *kubevirtv1.VirtualMachineInstance) bool { return v == nil })
	waitVM(t, ns, "vm", "Stopped", printable(kubevirtv1.VirtualMachineStatusStopped))

	// Manual never starts a VMI by itself. A VM made Manual: Harvester's
	// mutator replaces any run strategy a Halted VM is given with the one
	// its VM controller stored (harvesterhci.io/vmRunStrategy, else
	// RerunOnFailure: patchRunStrategy, the kubevirt/kubevirt#7295
	// workaround), so Halted -> Manual would start the VM.
	createVM(t, ns, "manual", vmOpts{strategy: kubevirtv1.RunStrategyManual})
	// (KubeVirt fills status.runStrategy only once a VM has run: its
	// Ready condition says the controller has seen it.)
	vm = waitVM(t, ns, "manual", "status for Manual", func(vm *kubevirtv1.VirtualMachine) bool {
		return vm != nil && vmCond(vm, kubevirtv1.VirtualMachineReady) != nil
	})
	if vm.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusStopped || vm.Status.Created {
		t.Errorf("manual vm: printable %s created %v", vm.Status.PrintableStatus, vm.Status.Created)
	}
	if _, err := env.dyn.Resource(gvrVMI).Namespace(ns).Get(testContext(t), "manual", metav1.GetOptions{}); err == nil {
		t.Error("a VMI exists for the Manual VM")
	}

	// Legacy spec.running (Harvester's mutator leaves it alone).
	patchVM(t, ns, "vm", map[string]any{"spec": map[string]any{"runStrategy": nil, "running": true}})
	waitVMI(t, ns, "vm", "Running via spec.running", running)
}

func TestVMDeletionCascadesToVMI(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "vm", vmOpts{})
	waitVMI(t, ns, "vm", "Running", running)
	deleteObject(t, gvrVM, ns, "vm")
	waitVM(t, ns, "vm", "deleted", func(v *kubevirtv1.VirtualMachine) bool { return v == nil })
	if err := simtest.WaitObject(testContext(t), env.dyn, gvrVMI, ns, "vm", simtest.Gone); err != nil {
		t.Fatalf("vmi not garbage collected: %v", err)
	}
}

func TestVMEvents(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "vm", vmOpts{})
	vmi := waitVMI(t, ns, "vm", "Running", running)
	// KubeVirt's events: virt-handler's Started on the VMI, virt-controller's
	// SuccessfulCreate on the VM and VMI (no Scheduled event: the scheduler's is the Pod's).
	if msg := waitEvent(t, ns, "vm", "Started"); msg != "VirtualMachineInstance started." {
		t.Errorf("Started event says %q on %s", msg, vmi.Status.NodeName)
	}
	waitEvent(t, ns, "vm", "SuccessfulCreate")
}

// The VM's finalizers, from the sources: Harvester v1.8's VM controller
// registers its OnRemove handler as "VMController.CleanupPVCAndSnapshot",
// which wrangler prefixes with "wrangler.cattle.io/"
// (pkg/controller/master/virtualmachine/register.go); KubeVirt's
// VirtualMachineControllerFinalizer (kubevirt.io/api/core/v1).
const (
	harvesterVMFinalizer = "wrangler.cattle.io/VMController.CleanupPVCAndSnapshot"
	kubevirtVMFinalizer  = "kubevirt.io/virtualMachineControllerFinalize"
)

func hasFinalizer(list []string) bool {
	return slices.Contains(list, harvesterVMFinalizer) && slices.Contains(list, kubevirtVMFinalizer)
}

// TestVMDeletionWaitsForItsVMI: as KubeVirt's VM controller does, a
// deleted VM's VMI is deleted and the VM stays, Terminating, until the VMI
// is gone (here held by a finalizer of the test's, as a dead host holds
// it); Harvester's finalizer is released at once.
func TestVMDeletionWaitsForItsVMI(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "held", vmOpts{strategy: kubevirtv1.RunStrategyAlways})
	waitVMI(t, ns, "held", "Running", running)
	const hold = "e2e.harvester-kit.io/hold"
	editVMIFinalizers(t, ns, "held", func(f []string) []string { return append(f, hold) })

	deleteObject(t, gvrVM, ns, "held")
	waitVMI(t, ns, "held", "deleted by the VM controller", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v != nil && v.DeletionTimestamp != nil
	})
	vm := waitVM(t, ns, "held", "Harvester's finalizer released", func(vm *kubevirtv1.VirtualMachine) bool {
		return vm != nil && !slices.Contains(vm.Finalizers, harvesterVMFinalizer)
	})
	if vm.DeletionTimestamp == nil || !slices.Equal(vm.Finalizers, []string{kubevirtVMFinalizer}) {
		t.Errorf("VM while its VMI is held: deletionTimestamp %v, finalizers %v; want Terminating with only %s", vm.DeletionTimestamp, vm.Finalizers, kubevirtVMFinalizer)
	}

	editVMIFinalizers(t, ns, "held", func(f []string) []string {
		return slices.DeleteFunc(f, func(f string) bool { return f == hold })
	})
	waitVMI(t, ns, "held", "gone", func(v *kubevirtv1.VirtualMachineInstance) bool { return v == nil })
	waitVM(t, ns, "held", "gone once its VMI is", func(vm *kubevirtv1.VirtualMachine) bool { return vm == nil })
}

// editVMIFinalizers changes a VMI's finalizers by edit, read and updated
// again on a conflict (the simulator changes them too).
func editVMIFinalizers(t *testing.T, ns, name string, edit func([]string) []string) {
	t.Helper()
	vmis := env.dyn.Resource(gvrVMI).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := vmis.Get(testContext(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.SetFinalizers(edit(cur.GetFinalizers()))
		_, err = vmis.Update(testContext(t), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("edit finalizers of VMI %s/%s: %v", ns, name, err)
	}
}
