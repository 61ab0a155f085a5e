package controllers

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the builder (then check the diff against KubeVirt's source)")

// launcherTestVMI is a driver-like VMI with a vGPU, a zone selector and
// anti-affinity.
func launcherTestVMI() *kubevirtv1.VirtualMachineInstance {
	grace := int64(120)
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "0f1e2d3c-0000-4000-8000-000000000001",
			Labels: map[string]string{"app": "web", "harvesterhci.io/creator": "docker-machine-driver-harvester"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}",
				"kubevirt.io/latest-observed-api-version": "v1", "harvesterhci.io/sshNames": `["default/sim-key"]`}},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			TerminationGracePeriodSeconds: &grace,
			NodeSelector:                  map[string]string{"topology.kubernetes.io/zone": "sim-zone-b"},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: "kubernetes.io/hostname"}}}},
			Tolerations: []corev1.Toleration{{Key: "kubevirt.io/drain", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Domain: kubevirtv1.DomainSpec{
				CPU:     &kubevirtv1.CPU{Sockets: 1, Cores: 2, Threads: 1},
				Machine: &kubevirtv1.Machine{Type: "q35"},
				Resources: kubevirtv1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
				},
				Devices: kubevirtv1.Devices{GPUs: []kubevirtv1.GPU{{Name: "gpu1", DeviceName: "nvidia.com/GRID_A100-1B"}}},
			},
		},
	}
}

// TestLauncherPod: the facts of KubeVirt v1.7's renderLaunchManifest,
// worked out by hand from template.go, nodeselectorrenderer.go,
// renderresources.go and the memory overhead formula (additional ratio 1.5).
func TestLauncherPod(t *testing.T) {
	vmi := launcherTestVMI()
	pod := launcherPod(vmi, "1.5")

	if pod.GenerateName != "virt-launcher-web-1-" || pod.Namespace != "default" || pod.Name != "" {
		t.Errorf("name %q generateName %q namespace %q", pod.Name, pod.GenerateName, pod.Namespace)
	}
	wantLabels := map[string]string{"app": "web", "harvesterhci.io/creator": "docker-machine-driver-harvester",
		"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "0f1e2d3c-0000-4000-8000-000000000001",
		"vm.kubevirt.io/name": "web-1", "vmi.kubevirt.io/id": "web-1"}
	equalMaps(t, "labels", pod.Labels, wantLabels)
	wantAnn := map[string]string{"harvesterhci.io/sshNames": `["default/sim-key"]`, "kubevirt.io/domain": "web-1",
		"kubectl.kubernetes.io/default-container": "compute", "kubevirt.io/migrationTransportUnix": "true",
		"descheduler.alpha.kubernetes.io/request-evict-only": ""}
	equalMaps(t, "annotations", pod.Annotations, wantAnn)
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "VirtualMachineInstance" || pod.OwnerReferences[0].APIVersion != "kubevirt.io/v1" ||
		pod.OwnerReferences[0].Name != "web-1" || pod.OwnerReferences[0].Controller == nil || !*pod.OwnerReferences[0].Controller ||
		pod.OwnerReferences[0].BlockOwnerDeletion == nil || !*pod.OwnerReferences[0].BlockOwnerDeletion {
		t.Errorf("owner references %+v, want the VMI as controller blocking deletion", pod.OwnerReferences)
	}
	equalMaps(t, "nodeSelector", pod.Spec.NodeSelector, map[string]string{"kubevirt.io/schedulable": "true", "kubernetes.io/arch": "amd64",
		"topology.kubernetes.io/zone": "sim-zone-b", "machine-type.node.kubevirt.io/q35": "true"})
	aff := pod.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %+v lacks the VMI's anti-affinity", aff)
	}
	req := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) != 1 || len(req.NodeSelectorTerms[0].MatchExpressions) != 1 ||
		req.NodeSelectorTerms[0].MatchExpressions[0].Key != "node-labeller.kubevirt.io/obsolete-host-model" ||
		req.NodeSelectorTerms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("node affinity %+v, want the obsolete-host-model rejection", req)
	}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "kubevirt.io/drain" {
		t.Errorf("tolerations %+v, want the VMI's", pod.Spec.Tolerations)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != 150 {
		t.Errorf("grace period %v, want 120 + 2*15", g)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.Hostname != "web-1" {
		t.Errorf("restart policy %s hostname %s", pod.Spec.RestartPolicy, pod.Spec.Hostname)
	}
	if len(pod.Spec.ReadinessGates) != 1 || pod.Spec.ReadinessGates[0].ConditionType != "kubevirt.io/virtual-machine-unpaused" {
		t.Errorf("readiness gates %+v", pod.Spec.ReadinessGates)
	}
	// Overhead: page tables 2Gi/512 (kilo-scaled: 2147484000/512 =
	// 4194304), processes 220Mi, 2 vCPUs * 8Mi, IO thread 8Mi, video 32Mi,
	// VFIO 1Gi: 1367343104; ratio 1.5 adds half its kilo-scaled value
	// (1367344 * 0.5 = 683672 k): 2051015104.
	const overhead = 2051015104
	c := pod.Spec.Containers
	if len(c) != 1 || c[0].Name != "compute" {
		t.Fatalf("containers %+v, want one named compute", c)
	}
	for name, want := range map[corev1.ResourceName]int64{corev1.ResourceMemory: 2<<30 + overhead, corev1.ResourceCPU: 1,
		corev1.ResourceEphemeralStorage: 50_000_000, "nvidia.com/GRID_A100-1B": 1} {
		got := c[0].Resources.Requests[name]
		if name == corev1.ResourceCPU {
			if got.MilliValue() != 200 {
				t.Errorf("requests.cpu %s, want 200m", got.String())
			}
			continue
		}
		if got.Value() != want {
			t.Errorf("requests.%s %s (%d), want %d", name, got.String(), got.Value(), want)
		}
	}
	for name, want := range map[corev1.ResourceName]int64{corev1.ResourceMemory: 4<<30 + overhead, corev1.ResourceCPU: 2, "nvidia.com/GRID_A100-1B": 1} {
		if got := c[0].Resources.Limits[name]; got.Value() != want {
			t.Errorf("limits.%s %s, want %d", name, got.String(), want)
		}
	}
	if _, ok := c[0].Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
		t.Error("an ephemeral-storage limit the VMI did not ask for")
	}

	checkGolden(t, "launcher-pod.golden.yaml", pod)
}

// TestLauncherPodNames: KubeVirt's hostname and VMI ID rules for long and
// dotted names.
func TestLauncherPodNames(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct{ name, hostname, wantHost, wantID string }{
		{"vm.example", "", "vm", "vm.example"},
		{long, "", strings.Repeat("a", 63), strings.Repeat("a", 54) + "-" + "ed6c69d9"},
		{"x", "custom", "custom", "x"},
	} {
		vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: kubevirtv1.VirtualMachineInstanceSpec{Hostname: tc.hostname}}
		pod := launcherPod(vmi, "")
		if pod.Spec.Hostname != tc.wantHost || pod.Labels["vm.kubevirt.io/name"] != tc.wantHost {
			t.Errorf("%s: hostname %q label %q, want %q", tc.name, pod.Spec.Hostname, pod.Labels["vm.kubevirt.io/name"], tc.wantHost)
		}
		if got := pod.Labels["vmi.kubevirt.io/id"]; got != tc.wantID {
			t.Errorf("%s: id %q, want %q", tc.name, got, tc.wantID)
		}
	}
}

func equalMaps(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s[%s] = %q, want %q", what, k, g, v)
		}
	}
}

// checkGolden compares obj as YAML with testdata/name (-update rewrites it).
func checkGolden(t *testing.T, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the builder's output:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestMigrationTargetPod: KubeVirt's createTargetPod adds, to the launcher
// pod, a required anti-affinity term on kubernetes.io/hostname against
// the VMI's own pods (created-by), the migration's added node selector
// (the pod's own keys win), the job label and name annotation.
func TestMigrationTargetPod(t *testing.T) {
	vmi := launcherTestVMI()
	mig := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: "web-1-mig", UID: "9999"},
		Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "web-1",
			AddedNodeSelector: map[string]string{"rack": "r2", "kubevirt.io/schedulable": "false"}}}
	pod := migrationTargetPod(vmi, mig, "1.5")
	terms := pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 2 {
		t.Fatalf("anti-affinity terms %+v, want the VMI's and KubeVirt's", terms)
	}
	last := terms[1]
	if last.TopologyKey != "kubernetes.io/hostname" || len(last.LabelSelector.MatchLabels) != 1 ||
		last.LabelSelector.MatchLabels["kubevirt.io/created-by"] != "0f1e2d3c-0000-4000-8000-000000000001" {
		t.Errorf("target anti-affinity term %+v", last)
	}
	if pod.Spec.NodeSelector["rack"] != "r2" || pod.Spec.NodeSelector["kubevirt.io/schedulable"] != "true" {
		t.Errorf("nodeSelector %v: want rack r2 added and the pod's schedulable kept", pod.Spec.NodeSelector)
	}
	if pod.Labels["kubevirt.io/migrationJobUID"] != "9999" || pod.Annotations["kubevirt.io/migrationJobName"] != "web-1-mig" {
		t.Errorf("labels %v annotations %v lack the migration job", pod.Labels, pod.Annotations)
	}
	if source := launcherPod(vmi, "1.5"); len(source.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Error("building the target changed the source pod's affinity")
	}
}

// TestCurrentPod: KubeVirt's CurrentVMIPod picks the most recent pod on
// the VMI's node, or the most recent pod while the VMI has no node.
func TestCurrentPod(t *testing.T) {
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: corev1.PodSpec{NodeName: node}}
	}
	// Oldest first, as launcherPods sorts them: a first pod on node-0, a
	// migration's target on node-1, a later migration's target on node-0.
	pods := []*corev1.Pod{pod("first", "node-0"), pod("target", "node-1"), pod("back", "node-0")}
	for _, tc := range []struct {
		pods       []*corev1.Pod
		node, want string
	}{
		{pods, "node-1", "target"}, // migrated: not the Succeeded source pod
		{pods, "node-0", "back"},
		{pods, "", "back"},
		{pods[:1], "node-0", "first"},
		{pods[:1], "node-2", ""},
		{nil, "", ""},
	} {
		got := ""
		if p := currentPod(tc.pods, tc.node); p != nil {
			got = p.Name
		}
		if got != tc.want {
			t.Errorf("currentPod(%d pods, %q) = %q, want %q", len(tc.pods), tc.node, got, tc.want)
		}
	}
	if got := activePods(pods[:2]); len(got) != 2 || got["uid-first"] != "node-0" || got["uid-target"] != "node-1" {
		t.Errorf("activePods = %v, want uid-first on node-0 and uid-target on node-1", got)
	}
}
