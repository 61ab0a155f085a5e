package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// limitsVM is a halted VM with only limits, as Harvester's UI sends it.
func limitsVM(name, cpu, memory string) *kubevirtv1.VirtualMachine {
	halted := kubevirtv1.RunStrategyHalted
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &halted, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
				CPU: &kubevirtv1.CPU{Cores: 2},
				Resources: kubevirtv1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
				}},
			}},
		}},
	}
}

// createVM creates vm and deletes it when the test ends.
func createVM(t *testing.T, ctx context.Context, vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	t.Helper()
	created, err := virt.KubevirtV1().VirtualMachines(vm.Namespace).Create(ctx, vm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create VM %s: %v", vm.Name, err)
	}
	t.Cleanup(func() {
		_ = virt.KubevirtV1().VirtualMachines(vm.Namespace).Delete(context.WithoutCancel(ctx), vm.Name, metav1.DeleteOptions{})
	})
	stored, err := virt.KubevirtV1().VirtualMachines(vm.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// domainResources is what the mutator decides: requests, guest memory, maxSockets.
func domainResources(vm *kubevirtv1.VirtualMachine) (cpu, mem, guest string, maxSockets uint32) {
	d := vm.Spec.Template.Spec.Domain
	if c, ok := d.Resources.Requests[corev1.ResourceCPU]; ok {
		cpu = c.String()
	}
	if m, ok := d.Resources.Requests[corev1.ResourceMemory]; ok {
		mem = m.String()
	}
	if d.Memory != nil && d.Memory.Guest != nil {
		guest = d.Memory.Guest.String()
	}
	if d.CPU != nil {
		maxSockets = d.CPU.MaxSockets
	}
	return cpu, mem, guest, maxSockets
}

// A VM created with limits only is stored as Harvester stores it with its
// shipped settings: requests overcommitted (cpu 1000%, memory 150%), the
// whole limit as guest memory (the overhead ratio 1.5 reserves nothing),
// one socket at most.
func TestMutatorStoresHarvesterResources(t *testing.T) {
	ctx := testContext(t)
	vm := createVM(t, ctx, limitsVM("mutator-limits", "2", "4Gi"))
	cpu, mem, guest, maxSockets := domainResources(vm)
	if cpu != "200m" || mem != "2730Mi" || guest != "4Gi" || maxSockets != 1 {
		t.Errorf("stored requests cpu %q memory %q, guest %q, maxSockets %d; want 200m, 2730Mi, 4Gi, 1", cpu, mem, guest, maxSockets)
	}
	if c := vm.Spec.Template.Spec.Domain.CPU; c.Cores != 2 || c.Sockets != 1 || c.Threads != 1 {
		t.Errorf("stored CPU %+v, want the VM's 2 cores and Harvester's default 1 socket, 1 thread", c)
	}
}

// With a GPU the memory request is the guest memory: no overcommit.
func TestMutatorGPUMemoryNotOvercommitted(t *testing.T) {
	ctx := testContext(t)
	in := limitsVM("mutator-gpu", "2", "4Gi")
	in.Spec.Template.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "gpu0", DeviceName: "nvidia.com/NVIDIA_A2-4Q"}}
	in.Annotations = map[string]string{harvester.AnnotationReservedMemory: "256Mi"}
	vm := createVM(t, ctx, in)
	cpu, mem, guest, _ := domainResources(vm)
	if cpu != "200m" || mem != "3840Mi" || guest != "3840Mi" {
		t.Errorf("stored requests cpu %q memory %q, guest %q; want 200m and the guest memory 3840Mi (4Gi less the reserved 256Mi) twice", cpu, mem, guest)
	}
}

// A reserved memory not below the limit is refused with Harvester's message
// and nothing is stored.
func TestMutatorRefusesReservedMemory(t *testing.T) {
	ctx := testContext(t)
	in := limitsVM("mutator-refused", "1", "1Gi")
	in.Annotations = map[string]string{harvester.AnnotationReservedMemory: "1Gi"}
	_, err := virt.KubevirtV1().VirtualMachines("default").Create(ctx, in, metav1.CreateOptions{})
	want := `admission webhook "mutator.harvesterhci.io" denied the request: reservedMemory can't be equal or greater than limits.memory  1073741824 1073741824`
	if err == nil || !strings.Contains(err.Error(), want) {
		if err == nil {
			_ = virt.KubevirtV1().VirtualMachines("default").Delete(context.Background(), in.Name, metav1.DeleteOptions{})
		}
		t.Fatalf("create error %v, want %q", err, want)
	}
	if _, err := virt.KubevirtV1().VirtualMachines("default").Get(ctx, in.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused VM: get %v, want NotFound", err)
	}
}

// Changing overcommit-config changes the requests of the next VM; an
// update that changes a limit is mutated again, one that does not is not.
func TestMutatorFollowsOvercommitSetting(t *testing.T) {
	ctx := testContext(t)
	old := createVM(t, ctx, limitsVM("mutator-before", "2", "4Gi"))
	setOvercommit(t, ctx, `{"cpu":200,"memory":200,"storage":100}`, "1", "2Gi")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		setOvercommit(t, ctx, "", "200m", "2730Mi")
	})

	vm := createVM(t, ctx, limitsVM("mutator-after", "2", "4Gi"))
	if cpu, mem, guest, _ := domainResources(vm); cpu != "1" || mem != "2Gi" || guest != "4Gi" {
		t.Errorf("after the setting change: requests cpu %q memory %q, guest %q; want 1, 2Gi, 4Gi", cpu, mem, guest)
	}

	// An update without a limit change keeps what the old setting gave.
	vms := virt.KubevirtV1().VirtualMachines("default")
	labelled, err := vms.Patch(ctx, old.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cpu, mem, _, _ := domainResources(labelled); cpu != "200m" || mem != "2730Mi" {
		t.Errorf("label update: requests cpu %q memory %q, want the create's 200m and 2730Mi kept", cpu, mem)
	}
	// A new memory limit is mutated with the current setting.
	resized, err := vms.Patch(ctx, old.Name, types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/template/spec/domain/resources/limits/memory","value":"8Gi"}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cpu, mem, guest, _ := domainResources(resized); cpu != "1" || mem != "4Gi" || guest != "8Gi" {
		t.Errorf("memory limit update: requests cpu %q memory %q, guest %q; want 1, 4Gi, 8Gi", cpu, mem, guest)
	}
}

// setOvercommit sets overcommit-config's value and waits until the webhook
// applies it (its settings cache follows a watch): a dry-run create of a
// 2 CPU / 4Gi VM gets the given requests.
func setOvercommit(t *testing.T, ctx context.Context, value, wantCPU, wantMem string) {
	t.Helper()
	settings := dyn.Resource(settingGVR)
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		u, err := settings.Get(ctx, harvester.SettingOvercommit, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var s harvesterv1.Setting
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			return false, err
		}
		if s.Default != harvester.DefaultOvercommit {
			t.Errorf("overcommit-config default %q, want Harvester's %q", s.Default, harvester.DefaultOvercommit)
		}
		if s.Value != value {
			u.Object["value"] = value
			if _, err := settings.Update(ctx, u, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
				return false, err
			}
			return false, nil
		}
		probe, err := virt.KubevirtV1().VirtualMachines("default").Create(ctx, limitsVM("mutator-probe", "2", "4Gi"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		cpu, mem, _, _ := domainResources(probe)
		return cpu == wantCPU && mem == wantMem, nil
	})
	if err != nil {
		t.Fatalf("set %s to %q and see requests cpu %s memory %s: %v", harvester.SettingOvercommit, value, wantCPU, wantMem, err)
	}
}
