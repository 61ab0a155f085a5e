package harvester

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func limitsVM(cpu, memory string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
				CPU: &kubevirtv1.CPU{Cores: 2, Sockets: 1, Threads: 1},
				Resources: kubevirtv1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
				}},
			}},
		}},
	}
}

func TestMutateVMResources(t *testing.T) {
	def, err := ParseOvercommit("")
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "g0", DeviceName: "nvidia.com/NVIDIA_A2-4Q"}}
	}
	cases := []struct {
		name          string
		modify        func(*kubevirtv1.VirtualMachine)
		ratio         string
		arm           bool
		cpu, mem, gst string
		maxSockets    uint32
	}{
		// 4Gi*100/150 truncated to MiB is 2730Mi; with the ratio set nothing is reserved.
		{"overcommitted", nil, "1.5", false, "200m", "2730Mi", "4Gi", 1},
		{"ratio unset reserves 100Mi", nil, "", false, "200m", "2730Mi", "3996Mi", 1},
		{"ratio zero reserves 100Mi", nil, "0", false, "200m", "2730Mi", "3996Mi", 1},
		{"annotation wins", func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations = map[string]string{AnnotationReservedMemory: "256Mi"}
		}, "1.5", false, "200m", "2730Mi", "3840Mi", 1},
		{"vGPU: memory request is the guest memory", gpu, "1.5", false, "200m", "4Gi", "4Gi", 1},
		{"vGPU without ratio", gpu, "", false, "200m", "3996Mi", "3996Mi", 1},
		{"host device", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "h", DeviceName: "x/y"}}
		}, "1.5", false, "200m", "4Gi", "4Gi", 1},
		{"dedicated CPUs: no overcommit", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU.DedicatedCPUPlacement = true
			gpu(vm)
		}, "", false, "2", "4Gi", "3996Mi", 1},
		{"arm64 has no maxSockets", nil, "1.5", true, "200m", "2730Mi", "4Gi", 0},
	}
	for _, c := range cases {
		vm := limitsVM("2", "4Gi")
		if c.modify != nil {
			c.modify(vm)
		}
		if err := MutateVMResources(vm, MutatorSettings{Overcommit: &def, OverheadRatio: c.ratio, ARM: c.arm}); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		d := vm.Spec.Template.Spec.Domain
		for what, pair := range map[string][2]resource.Quantity{
			"requests.cpu":    {d.Resources.Requests[corev1.ResourceCPU], resource.MustParse(c.cpu)},
			"requests.memory": {d.Resources.Requests[corev1.ResourceMemory], resource.MustParse(c.mem)},
			"guest":           {*d.Memory.Guest, resource.MustParse(c.gst)},
		} {
			if pair[0].Cmp(pair[1]) != 0 {
				t.Errorf("%s: %s = %s, want %s", c.name, what, pair[0].String(), pair[1].String())
			}
		}
		if d.CPU.MaxSockets != c.maxSockets {
			t.Errorf("%s: maxSockets %d, want %d", c.name, d.CPU.MaxSockets, c.maxSockets)
		}
	}
}

func TestMutateVMResourcesRefusals(t *testing.T) {
	def, _ := ParseOvercommit("")
	cases := []struct {
		name, memory, annotation, want string
	}{
		{"reserved not below the limit", "1Gi", "1Gi", "must be less than the memory limit"},
		{"reserved not a size", "1Gi", "lots", "is not a memory size"},
		{"guest below 10Mi", "105Mi", "", "under the minimum requirement"},
	}
	for _, c := range cases {
		vm := limitsVM("1", c.memory)
		if c.annotation != "" {
			vm.Annotations = map[string]string{AnnotationReservedMemory: c.annotation}
		}
		err := MutateVMResources(vm, MutatorSettings{Overcommit: &def})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	vm := limitsVM("2", "4Gi")
	if err := MutateVMResources(vm, MutatorSettings{}); err != nil || vm.Spec.Template.Spec.Domain.Resources.Requests != nil {
		t.Errorf("without the overcommit setting the VM must be left alone: %v %v", err, vm.Spec.Template.Spec.Domain.Resources.Requests)
	}
}

func TestParseOvercommit(t *testing.T) {
	if o, err := ParseOvercommit(`{"cpu":1600,"memory":200,"storage":200}`); err != nil || o.CPU != 1600 || o.Memory != 200 {
		t.Errorf("got %+v, %v", o, err)
	}
	for _, bad := range []string{"{", `{"cpu":0,"memory":150}`} {
		if _, err := ParseOvercommit(bad); err == nil || !strings.Contains(err.Error(), SettingOvercommit) {
			t.Errorf("%q: error %v, want one naming %s", bad, err, SettingOvercommit)
		}
	}
}

func TestLauncherResources(t *testing.T) {
	def, _ := ParseOvercommit("")
	vm := limitsVM("2", "4Gi")
	if err := MutateVMResources(vm, MutatorSettings{Overcommit: &def, OverheadRatio: "1"}); err != nil {
		t.Fatal(err)
	}
	spec := &vm.Spec.Template.Spec
	req, lim := LauncherResources(spec, "amd64", "1")
	overhead := LauncherMemoryOverhead(spec, "amd64", "1")
	wantReq := resource.MustParse("2730Mi")
	wantReq.Add(overhead)
	wantLim := resource.MustParse("4Gi")
	wantLim.Add(overhead)
	if got := req[corev1.ResourceMemory]; got.Cmp(wantReq) != 0 {
		t.Errorf("requests.memory %s, want %s", got.String(), wantReq.String())
	}
	if got := lim[corev1.ResourceMemory]; got.Cmp(wantLim) != 0 {
		t.Errorf("limits.memory %s, want %s", got.String(), wantLim.String())
	}
	if got := req[corev1.ResourceCPU]; got.String() != "200m" {
		t.Errorf("requests.cpu %s, want 200m", got.String())
	}

	spec.Domain.CPU.DedicatedCPUPlacement, spec.Domain.CPU.IsolateEmulatorThread = true, true
	req, lim = LauncherResources(spec, "amd64", "1")
	for what, q := range map[string]resource.Quantity{"requests.cpu": req[corev1.ResourceCPU], "limits.cpu": lim[corev1.ResourceCPU]} {
		if q.Value() != 3 {
			t.Errorf("dedicated with an emulator thread: %s %s, want 3", what, q.String())
		}
	}
	if a, b := req[corev1.ResourceMemory], lim[corev1.ResourceMemory]; a.Cmp(b) != 0 {
		t.Errorf("dedicated: memory limit %s must equal the request %s", b.String(), a.String())
	}
}
