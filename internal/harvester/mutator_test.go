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
		// Harvester v1.8's words, the two spaces included.
		{"reserved not below the limit", "1Gi", "1Gi", "reservedMemory can't be equal or greater than limits.memory  1073741824 1073741824"},
		{"reserved not a size", "1Gi", "lots", "annotation lots can't be converted to memory unit"},
		{"guest below 10Mi", "105Mi", "", "guest memory is under the minimum requirement (10 Mi), original: 110100480, final: 5242880"},
	}
	for _, c := range cases {
		vm := limitsVM("1", c.memory)
		if c.annotation != "" {
			vm.Annotations = map[string]string{AnnotationReservedMemory: c.annotation}
		}
		err := MutateVMResources(vm, MutatorSettings{Overcommit: &def})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	vm := limitsVM("2", "4Gi")
	if err := MutateVMResources(vm, MutatorSettings{}); err != nil || vm.Spec.Template.Spec.Domain.Resources.Requests != nil {
		t.Errorf("without the overcommit setting the VM must be left alone: %v %v", err, vm.Spec.Template.Spec.Domain.Resources.Requests)
	}
}

func TestMutateVMResourcesHotplug(t *testing.T) {
	def, _ := ParseOvercommit("")
	cases := []struct {
		name      string
		guest     string // the VM's own guest memory, "" for none
		wantGuest string
	}{
		// With hot-plug the VM's guest memory is the base and is kept.
		{"guest memory given", "2Gi", "2Gi"},
		// Without one, the limit less the reserved memory is set.
		{"no guest memory", "", "3996Mi"},
	}
	for _, c := range cases {
		vm := limitsVM("2", "4Gi")
		vm.Annotations = map[string]string{AnnotationCPUMemoryHotplug: "True"}
		if c.guest != "" {
			g := resource.MustParse(c.guest)
			vm.Spec.Template.Spec.Domain.Memory = &kubevirtv1.Memory{Guest: &g}
		}
		if err := MutateVMResources(vm, MutatorSettings{Overcommit: &def}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		d := vm.Spec.Template.Spec.Domain
		if got := d.Memory.Guest.String(); got != c.wantGuest {
			t.Errorf("%s: guest %s, want %s", c.name, got, c.wantGuest)
		}
		if d.CPU.MaxSockets != 0 {
			t.Errorf("%s: maxSockets %d, want none with hot-plug", c.name, d.CPU.MaxSockets)
		}
	}
	// The reserved memory comes off the hot-plug guest memory too.
	vm := limitsVM("2", "4Gi")
	g := resource.MustParse("2Gi")
	vm.Annotations = map[string]string{AnnotationCPUMemoryHotplug: "true", AnnotationReservedMemory: "512Mi"}
	vm.Spec.Template.Spec.Domain.Memory = &kubevirtv1.Memory{Guest: &g}
	vm.Spec.Template.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "g0", DeviceName: "nvidia.com/x"}}
	if err := MutateVMResources(vm, MutatorSettings{Overcommit: &def}); err != nil {
		t.Fatal(err)
	}
	if got := vm.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory]; got.String() != "1536Mi" {
		t.Errorf("hot-plug with a GPU: requests.memory %s, want 1536Mi", got.String())
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
