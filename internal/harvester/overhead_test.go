package harvester

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestVMMemoryOverhead(t *testing.T) {
	cpu := func(n string) corev1.ResourceList {
		l := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}
		if n != "" {
			l[corev1.ResourceCPU] = resource.MustParse(n)
		}
		return l
	}
	cases := []struct {
		cpu, arch, ratio string
		want             int64
	}{
		{"2", "amd64", "1", 276 * mi},             // 220Mi processes + 2*8Mi vCPUs + 8Mi IO thread + 32Mi video
		{"2", "amd64", "", 289406976 + 144703000}, // the default 1.5: KubeVirt adds 0.5 of the kilo-scaled value, truncated
		{"2", "amd64", "1.5", 289406976 + 144703000},
		{"4", "amd64", "1", 292 * mi},
		{"", "amd64", "1", 268 * mi}, // at least one vCPU
		{"2", "amd64", "bad", 289406976 + 144703000},
		{"2", "amd64", "0", 289406976 + 144703000},   // zero clears the setting: the default applies
		{"2", "amd64", "0.5", 289406976 + 144703000}, // below 1 is refused by Harvester: the default
		{"1", "amd64", "2", 268*mi + 281019000},      // the kilo-scaled value rounds up
		{"2", ArchARM64, "1", (276 + 128) * mi},      // UEFI's two pflash devices on aarch64
	}
	for _, c := range cases {
		got := VMMemoryOverhead(cpu(c.cpu), c.arch, c.ratio)
		if got.Value() != c.want {
			t.Errorf("VMMemoryOverhead(cpu %q, %s, %q) = %d, want %d", c.cpu, c.arch, c.ratio, got.Value(), c.want)
		}
	}
}

func TestLauncherMemoryOverhead(t *testing.T) {
	const base = 276 * mi // two vCPUs, as above
	// Page tables for a 4Gi request: 4294968 kilo-scaled *1000 / 512.
	const pageTables = 8388609
	no := false
	cases := []struct {
		name   string
		modify func(*kubevirtv1.VirtualMachineInstanceSpec)
		want   int64
	}{
		{"plain", func(*kubevirtv1.VirtualMachineInstanceSpec) {}, base + pageTables},
		{"vGPU", func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "g0", DeviceName: "nvidia.com/NVIDIA_A2-4Q"}}
		}, base + pageTables + 1<<30},
		{"host device", func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "h0", DeviceName: "intel.com/x"}}
		}, base + pageTables + 1<<30},
		{"TPM", func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.Devices.TPM = &kubevirtv1.TPMDevice{} }, base + pageTables + 53*mi},
		{"TPM disabled", func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Domain.Devices.TPM = &kubevirtv1.TPMDevice{Enabled: &no}
		}, base + pageTables},
		{"dedicated CPUs", func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.DedicatedCPUPlacement = true }, base + pageTables + 100*mi},
		{"no video", func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.Devices.AutoattachGraphicsDevice = &no }, base + pageTables - 32*mi},
		{"topology counts", func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 2 }, base + pageTables + 16*mi},
	}
	for _, c := range cases {
		spec := &kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
			CPU: &kubevirtv1.CPU{Cores: 2, Sockets: 1, Threads: 1},
			Resources: kubevirtv1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourceCPU: resource.MustParse("200m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourceCPU: resource.MustParse("2")},
			},
		}}
		c.modify(spec)
		if got := LauncherMemoryOverhead(spec, "amd64", "1"); got.Value() != c.want {
			t.Errorf("%s: overhead %d, want %d", c.name, got.Value(), c.want)
		}
	}
}
