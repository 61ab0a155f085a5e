package simctl

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

const (
	zoneKey     = "topology.kubernetes.io/zone"
	regionKey   = "topology.kubernetes.io/region"
	hostnameKey = "kubernetes.io/hostname"
)

func nodeLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	n, err := env.kube.CoreV1().Nodes().Get(testContext(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return n.Labels
}

func TestScheduleNodeSelectorAndAffinity(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	tests := []struct {
		name     string
		opts     vmOpts
		wantNode func(node string, labels map[string]string) bool
		want     string
	}{
		{"selector-zone-b", vmOpts{nodeSelector: map[string]string{zoneKey: "sim-zone-b"}},
			func(_ string, l map[string]string) bool { return l[zoneKey] == "sim-zone-b" }, "a host in sim-zone-b"},
		{"affinity-in-host", vmOpts{affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostnameKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"harvester-node-2"}}}}}}}}},
			func(n string, _ map[string]string) bool { return n == "harvester-node-2" }, "harvester-node-2"},
		{"affinity-notin-zone-a", vmOpts{affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zoneKey, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"sim-zone-a"}}}}}}}}},
			func(_ string, l map[string]string) bool { return l[zoneKey] != "sim-zone-a" }, "a host outside sim-zone-a"},
		// Harvester's VM mutator keeps only terms with a match expression
		// (makeAffinityFromVMTemplate drops a term of match fields alone):
		// the term carries one that every host matches.
		{"match-fields-name", vmOpts{affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostnameKey, Operator: corev1.NodeSelectorOpExists}},
				MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"harvester-node-1"}}}}}}}}},
			func(n string, _ map[string]string) bool { return n == "harvester-node-1" }, "harvester-node-1"},
	}
	for _, tt := range tests {
		createVM(t, ns, tt.name, tt.opts)
	}
	for _, tt := range tests {
		vmi := waitVMI(t, ns, tt.name, "Running", running)
		node := vmi.Status.NodeName
		if !tt.wantNode(node, nodeLabels(t, node)) {
			t.Errorf("%s: scheduled on %s, want %s", tt.name, node, tt.want)
		}
		if vmi.Labels["kubevirt.io/nodeName"] != node {
			t.Errorf("%s: label kubevirt.io/nodeName = %q, want %q", tt.name, vmi.Labels["kubevirt.io/nodeName"], node)
		}
	}
}

func webAntiAffinity(required bool) *corev1.Affinity {
	term := corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: hostnameKey}
	if required {
		return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
	}
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}}}
}

func TestAntiAffinitySpreadsAcrossHosts(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	for i := range 3 {
		createVM(t, ns, fmt.Sprintf("web-%d", i), vmOpts{labels: map[string]string{"app": "web"}, affinity: webAntiAffinity(false)})
	}
	seen := map[string]string{}
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		node := waitVMI(t, ns, name, "Running", running).Status.NodeName
		if other, dup := seen[node]; dup {
			t.Errorf("%s and %s share host %s despite preferred anti-affinity", other, name, node)
		}
		seen[node] = name
	}
}

func TestUnsatisfiableStaysScheduling(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "nowhere", vmOpts{nodeSelector: map[string]string{zoneKey: "no-such-zone"}})
	waitVMI(t, ns, "nowhere", "Unschedulable", unschedulableWith("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"))
	vm := waitVM(t, ns, "nowhere", "ErrorUnschedulable", printable(kubevirtv1.VirtualMachineStatusUnschedulable))
	if c := vmCond(vm, "PodScheduled"); c == nil || c.Reason != "Unschedulable" {
		t.Errorf("vm PodScheduled condition = %+v", c)
	}
	// kube-scheduler's FailedScheduling is about the launcher Pod (KubeVirt
	// emits none on the VMI).
	if msg := waitPodEvent(t, ns, "nowhere", "FailedScheduling"); !strings.Contains(msg, "didn't match") {
		t.Errorf("FailedScheduling event says %q", msg)
	}

	// Required anti-affinity is hard: three hosts take three, the fourth waits
	// until one leaves.
	for i := range 4 {
		createVM(t, ns, fmt.Sprintf("hard-%d", i), vmOpts{labels: map[string]string{"app": "web"}, affinity: webAntiAffinity(true)})
	}
	var waiting string
	runningCount := 0
	for i := range 4 {
		name := fmt.Sprintf("hard-%d", i)
		v := waitVMI(t, ns, name, "Running or Unschedulable", func(v *kubevirtv1.VirtualMachineInstance) bool {
			return running(v) || unschedulableWith("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")(v)
		})
		if running(v) {
			runningCount++
		} else {
			waiting = name
		}
	}
	if runningCount != 3 || waiting == "" {
		t.Fatalf("%d VMIs running, waiting %q; want 3 running and one unschedulable", runningCount, waiting)
	}
	for i := range 4 {
		if name := fmt.Sprintf("hard-%d", i); name != waiting {
			patchVM(t, ns, name, map[string]any{"spec": map[string]any{"runStrategy": "Halted"}})
			break
		}
	}
	waitVMI(t, ns, waiting, "Running once a host is free", running)

	// Fixing the selector re-evaluates the waiting VMI (via a restart).
	patchVM(t, ns, "nowhere", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"nodeSelector": map[string]any{zoneKey: "sim-zone-a"}}}}})
	deleteObject(t, gvrVMI, ns, "nowhere")
	waitVMI(t, ns, "nowhere", "Running after the fix", running)
}

func TestTopologyAnnotationsOnlyForDriverVMs(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "driver-vm", vmOpts{creator: true})
	createVM(t, ns, "other-vm", vmOpts{})
	// Harvester's VMI controller copies the host's labels once the VMI has a
	// host, asynchronously: wait for its write.
	vmi := waitVMI(t, ns, "driver-vm", "Running, annotated", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return running(v) && v.Annotations[hostnameKey] != ""
	})
	host := nodeLabels(t, vmi.Status.NodeName)
	for _, k := range []string{zoneKey, regionKey, hostnameKey} {
		if got := vmi.Annotations[k]; got == "" || got != host[k] {
			t.Errorf("driver vmi annotation %s = %q, want host label %q", k, got, host[k])
		}
	}
	other := waitVMI(t, ns, "other-vm", "Running", running)
	for _, k := range []string{zoneKey, regionKey, hostnameKey} {
		if v, ok := other.Annotations[k]; ok {
			t.Errorf("vmi of a VM without the creator label has annotation %s=%q", k, v)
		}
	}
}
