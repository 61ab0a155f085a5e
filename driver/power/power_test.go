package power

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

const (
	testMachine   = "c1-pool1-abcde"
	testNS        = "default"
	testMachineID = "mine"
)

var vmiResource = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}

// newPower returns machine testMachine and the API of a fake Harvester
// holding objs (KubeVirt objects).
func newPower(t *testing.T, objs ...runtime.Object) (*harvesterapi.API, drivertest.Harvester, *machine.Machine) {
	t.Helper()
	f := drivertest.NewHarvester(nil, objs, nil)
	c := config.Defaults()
	c.VMNamespace, c.WaitTimeoutSeconds = testNS, 5
	m := &machine.Machine{Config: c, Ownership: machine.Ownership{MachineID: testMachineID}, Name: testMachine}
	return f.API(config.CredentialsRejected), f, m
}

func labels(id string) map[string]string {
	l := harvester.MachineLabels(testNS, testMachine, "c1")
	l[harvester.LabelMachineID] = id
	return l
}

func fakeVM(rs kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: testNS, UID: "uid-1", Generation: 1, Labels: labels(testMachineID)},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: &rs},
	}
}

func fakeVMI(id, uid string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: testNS, UID: types.UID(uid), Labels: labels(id)},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: "10.0.0.5"}}},
	}
}

func runStrategy(t *testing.T, f drivertest.Harvester) kubevirtv1.VirtualMachineRunStrategy {
	t.Helper()
	vm, err := f.Virt.KubevirtV1().VirtualMachines(testNS).Get(context.Background(), testMachine, metav1.GetOptions{})
	if err != nil || vm.Spec.RunStrategy == nil {
		t.Fatalf("VM %v, %v", vm, err)
	}
	return *vm.Spec.RunStrategy
}

// haltStops plays KubeVirt's VM controller for a VM set Halted: it stops
// the VM's instance.
func haltStops(t *testing.T, f drivertest.Harvester) {
	f.Virt.PrependReactor("update", "virtualmachines", func(a k8stesting.Action) (bool, runtime.Object, error) {
		vm := a.(k8stesting.UpdateAction).GetObject().(*kubevirtv1.VirtualMachine)
		if vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == kubevirtv1.RunStrategyHalted {
			if err := f.Virt.Tracker().Delete(vmiResource, testNS, testMachine); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
}

// TestStartSetsRerunOnFailure: Start runs a halted VM with the machine's
// strategy and returns once its instance runs with an address.
func TestStartSetsRerunOnFailure(t *testing.T) {
	api, f, m := newPower(t, fakeVM(kubevirtv1.RunStrategyHalted), fakeVMI(testMachineID, "vmi-1"))
	if err := Start(context.Background(), api, m); err != nil {
		t.Fatalf("start: %v", err)
	}
	if rs := runStrategy(t, f); rs != kubevirtv1.RunStrategyRerunOnFailure {
		t.Errorf("run strategy %s, want RerunOnFailure", rs)
	}
}

// TestStopHaltsAndWaits: Stop sets Halted and returns once the instance
// is gone.
func TestStopHaltsAndWaits(t *testing.T) {
	api, f, m := newPower(t, fakeVM(kubevirtv1.RunStrategyRerunOnFailure), fakeVMI(testMachineID, "vmi-1"))
	haltStops(t, f)
	if err := Stop(context.Background(), api, m); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if rs := runStrategy(t, f); rs != kubevirtv1.RunStrategyHalted {
		t.Errorf("run strategy %s, want Halted", rs)
	}
}

// TestKillDeletesWithoutGrace: Kill halts the VM and deletes its own
// instance with a grace period of zero.
func TestKillDeletesWithoutGrace(t *testing.T) {
	api, f, m := newPower(t, fakeVM(kubevirtv1.RunStrategyRerunOnFailure), fakeVMI(testMachineID, "vmi-1"))
	if err := Kill(context.Background(), api, m); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if rs := runStrategy(t, f); rs != kubevirtv1.RunStrategyHalted {
		t.Errorf("run strategy %s, want Halted", rs)
	}
	deletes := 0
	for _, a := range f.Virt.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "virtualmachineinstances" {
			deletes++
			if g := d.GetDeleteOptions().GracePeriodSeconds; g == nil || *g != 0 {
				t.Errorf("VMI deleted with grace period %v, want 0", g)
			}
		}
	}
	if deletes != 1 {
		t.Errorf("%d VMI deletes, want 1", deletes)
	}
}

// TestKillLeavesForeignVMI: a VMI of the machine's name that is not the
// machine's is not deleted.
func TestKillLeavesForeignVMI(t *testing.T) {
	api, f, m := newPower(t, fakeVM(kubevirtv1.RunStrategyRerunOnFailure), fakeVMI("other", "vmi-1"))
	if err := Kill(context.Background(), api, m); !errors.Is(err, machine.ErrNotOwned) {
		t.Fatalf("got %v", err)
	}
	if _, err := f.Virt.KubevirtV1().VirtualMachineInstances(testNS).Get(context.Background(), testMachine, metav1.GetOptions{}); err != nil {
		t.Errorf("VMI: %v", err)
	}
}

// TestRestartRestoresRunStrategy: a restart whose VMI delete fails puts
// back the run strategy it found.
func TestRestartRestoresRunStrategy(t *testing.T) {
	api, f, m := newPower(t, fakeVM(kubevirtv1.RunStrategyManual), fakeVMI(testMachineID, "vmi-1"))
	f.Virt.PrependReactor("delete", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("boom"))
	})
	if err := Restart(context.Background(), api, m); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("got %v", err)
	}
	if rs := runStrategy(t, f); rs != kubevirtv1.RunStrategyManual {
		t.Errorf("run strategy after failed restart: %s, want Manual", rs)
	}
}

// TestRestartWaitsForNewInstance: Restart deletes the running instance,
// returns once one of another UID runs, and puts back the strategy.
func TestRestartWaitsForNewInstance(t *testing.T) {
	api, f, m := newPower(t, fakeVM(kubevirtv1.RunStrategyRerunOnFailure), fakeVMI(testMachineID, "vmi-1"))
	// KubeVirt's controller re-creates the instance of a VM run Always.
	f.Virt.PrependReactor("delete", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err := f.Virt.Tracker().Update(vmiResource, fakeVMI(testMachineID, "vmi-2"), testNS); err != nil {
			t.Error(err)
		}
		return true, nil, nil
	})
	if err := Restart(context.Background(), api, m); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if rs := runStrategy(t, f); rs != kubevirtv1.RunStrategyRerunOnFailure {
		t.Errorf("run strategy after restart: %s, want RerunOnFailure back", rs)
	}
}
