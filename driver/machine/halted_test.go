package machine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// The annotation and event reason of Harvester v1.8's stopVM
// (pkg/controller/master/virtualmachine/vm_controller.go; the key is
// util.AnnotationInsufficientResourceQuota), and the message KubeVirt's
// FailedCreate condition gives it.
const (
	harvesterHaltAnnotation = "harvesterhci.io/insufficient-resource-quota"
	quotaRefusal            = `failed to create virtual machine pod: pods "virt-launcher-m1-x7k2p" is forbidden: exceeded quota: q, requested: limits.cpu=1015m, used: limits.cpu=0, limited: limits.cpu=1`
)

func haltedVM(generation int64, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "default", UID: "vm-1", Generation: generation},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &halted}}
	if change != nil {
		change(vm)
	}
	return vm
}

// TestHaltedForGood: a VM whose run strategy turned Halted after the driver
// set it running will not run (KubeVirt starts a halted VM only on a start
// request); Harvester's halt names its reason and message. A halt before
// the driver set it running, a pending start request, or another
// strategy is not final.
func TestHaltedForGood(t *testing.T) {
	rerun := kubevirtv1.RunStrategyRerunOnFailure
	no := false
	for _, tc := range []struct {
		name string
		vm   *kubevirtv1.VirtualMachine
		want string // "": may still run
	}{
		{"halted by Harvester", haltedVM(3, func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations = map[string]string{harvesterHaltAnnotation: quotaRefusal}
		}), "was halted by Harvester for InsufficientResourceQuota (" + quotaRefusal + "), and nothing starts it again"},
		{"halted by someone else", haltedVM(2, nil), "was halted by someone else (runStrategy Halted), and nothing starts it again"},
		{"running: false", haltedVM(2, func(vm *kubevirtv1.VirtualMachine) { vm.Spec.RunStrategy, vm.Spec.Running = nil, &no }), "was halted by someone else"},
		{"halted before it was set running", haltedVM(1, nil), ""},
		{"a start is requested", haltedVM(2, func(vm *kubevirtv1.VirtualMachine) {
			vm.Status.StateChangeRequests = []kubevirtv1.VirtualMachineStateChangeRequest{{Action: kubevirtv1.StartRequest}}
		}), ""},
		{"running", haltedVM(2, func(vm *kubevirtv1.VirtualMachine) { vm.Spec.RunStrategy = &rerun }), ""},
	} {
		err := haltedForGood(tc.vm, 2)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want none", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrVMHalted)):
			t.Errorf("%s: %v, want ErrVMHalted with %q", tc.name, err, tc.want)
		}
	}
}

// TestWaitRunningEndsWhenHalted: a wait for the VM to run ends at once,
// naming Harvester's reason and message, when Harvester halts the VM; a
// wait that does not need it to run (stop) goes on.
func TestWaitRunningEndsWhenHalted(t *testing.T) {
	for _, running := range []bool{true, false} {
		rerun := kubevirtv1.RunStrategyRerunOnFailure
		vm := haltedVM(1, func(vm *kubevirtv1.VirtualMachine) { vm.Spec.RunStrategy = &rerun })
		virt := virtfake.NewSimpleClientset(vm)
		api := harvesterapi.FromClients(restapifake.Clients{Kube: kubefake.NewSimpleClientset(), Virt: virt}, nil, nil, harvesterapi.Options{CallTimeout: time.Second})
		m := &Machine{Config: config.Config{VMNamespace: "default", WaitTimeoutSeconds: 3}, Ownership: Ownership{VMUID: "vm-1"}, Name: "m1"}
		never := func(*kubevirtv1.VirtualMachineInstance) bool { return false }
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			var err error
			if running {
				_, err = m.WaitRunning(context.Background(), api, "", 1, "to run", never)
			} else {
				_, err = m.WaitVMI(context.Background(), api, "", "to stop", never)
			}
			done <- err
		}()
		// Harvester's stopVM: the annotation and the run strategy in one
		// update (a new generation).
		time.Sleep(200 * time.Millisecond)
		halted := haltedVM(2, func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations = map[string]string{harvesterHaltAnnotation: quotaRefusal}
		})
		if _, err := virt.KubevirtV1().VirtualMachines("default").Update(context.Background(), halted, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := <-done
		took := time.Since(start)
		if !running {
			if err == nil || !strings.Contains(err.Error(), "timed out") {
				t.Errorf("a wait to stop ended with %v, want its timeout", err)
			}
			continue
		}
		if !errors.Is(err, ErrVMHalted) || took > 2*time.Second {
			t.Fatalf("the wait ended after %s with %v, want ErrVMHalted at once", took, err)
		}
		for _, want := range []string{"VM default/m1 was halted by Harvester for InsufficientResourceQuota (" + quotaRefusal + ")", "while waiting for it to run; last seen: no VM instance"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	}
}
