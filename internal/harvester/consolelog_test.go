package harvester

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestLauncherConsoleLogSidecar: KubeVirt v1.7 renders the
// guest-console-log sidecar (serialconsolelog.go) as a restartable init
// container asking 5m and 35M, limited to 15m and 60M, unless the VMI
// turns the serial console or its log off; with dedicated CPUs or
// guaranteed QoS it asks its limits. Quota admission charges it beside
// the compute container.
func TestLauncherConsoleLogSidecar(t *testing.T) {
	no, yes := false, true
	spec := func(change func(*kubevirtv1.VirtualMachineInstanceSpec)) *kubevirtv1.VirtualMachineInstanceSpec {
		s := &kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{Resources: kubevirtv1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		}}}
		if change != nil {
			change(s)
		}
		return s
	}
	overcommitted := map[string]string{"requests.cpu": "5m", "requests.memory": "35M", "limits.cpu": "15m", "limits.memory": "60M"}
	asLimits := map[string]string{"requests.cpu": "15m", "requests.memory": "60M", "limits.cpu": "15m", "limits.memory": "60M"}
	for _, tc := range []struct {
		name string
		spec *kubevirtv1.VirtualMachineInstanceSpec
		want map[string]string // nil: no sidecar
	}{
		{"says nothing", spec(nil), overcommitted},
		{"logSerialConsole true", spec(func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.Devices.LogSerialConsole = &yes }), overcommitted},
		{"logSerialConsole false", spec(func(s *kubevirtv1.VirtualMachineInstanceSpec) { s.Domain.Devices.LogSerialConsole = &no }), nil},
		{"no serial console", spec(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Domain.Devices.AutoattachSerialConsole, s.Domain.Devices.LogSerialConsole = &no, &yes
		}), nil},
		{"dedicated CPUs", spec(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Domain.CPU = &kubevirtv1.CPU{Cores: 1, DedicatedCPUPlacement: true}
		}), asLimits},
		{"guaranteed QoS", spec(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
			s.Domain.Resources.Requests = s.Domain.Resources.Limits.DeepCopy()
		}), asLimits},
	} {
		pod := LauncherPod(tc.spec, "amd64", "")
		if tc.want == nil {
			if len(pod.Spec.InitContainers) != 0 {
				t.Errorf("%s: init containers %v, want none", tc.name, pod.Spec.InitContainers)
			}
			continue
		}
		if len(pod.Spec.InitContainers) != 1 {
			t.Fatalf("%s: %d init containers, want the sidecar", tc.name, len(pod.Spec.InitContainers))
		}
		c := pod.Spec.InitContainers[0]
		if c.Name != "guest-console-log" || c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Errorf("%s: init container %s (restart policy %v), want guest-console-log, Always", tc.name, c.Name, c.RestartPolicy)
		}
		got := map[string]resource.Quantity{
			"requests.cpu": c.Resources.Requests[corev1.ResourceCPU], "requests.memory": c.Resources.Requests[corev1.ResourceMemory],
			"limits.cpu": c.Resources.Limits[corev1.ResourceCPU], "limits.memory": c.Resources.Limits[corev1.ResourceMemory],
		}
		for k, w := range tc.want {
			if g := got[k]; g.Cmp(resource.MustParse(w)) != 0 {
				t.Errorf("%s: %s = %s, want %s", tc.name, k, g.String(), w)
			}
		}
	}
}

// TestPodTotalsAddSidecars: quota admission adds a sidecar's requests and
// limits to the containers'; an ordinary init container counts only where
// it asks more than the sidecars started before it and the containers.
func TestPodTotalsAddSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	res := func(cpu, mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "compute", Resources: res("1", "1Gi")}},
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: res("15m", "60M")},
			{Name: "setup", Resources: res("2", "10Mi")},
		},
	}}
	requests, limits := PodTotals(pod)
	for _, l := range []corev1.ResourceList{requests, limits} {
		// CPU: the setup container and the sidecar before it (2015m)
		// ask more than the containers and sidecar (1015m).
		if cpu := l[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2015m")) != 0 {
			t.Errorf("cpu %s, want 2015m", cpu.String())
		}
		want := resource.MustParse("1Gi")
		want.Add(resource.MustParse("60M"))
		if mem := l[corev1.ResourceMemory]; mem.Cmp(want) != 0 {
			t.Errorf("memory %s, want %s", mem.String(), want.String())
		}
	}
}
