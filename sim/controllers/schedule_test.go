package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	zoneKey     = "topology.kubernetes.io/zone"
	hostnameKey = "kubernetes.io/hostname"
)

func testHosts() []corev1.Node {
	mk := func(name, zone string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			zoneKey: zone, hostnameKey: name, "topology.kubernetes.io/region": "sim-region"}}}
	}
	return []corev1.Node{mk("harvester-node-0", "sim-zone-a"), mk("harvester-node-1", "sim-zone-b"), mk("harvester-node-2", "sim-zone-a")}
}

func antiAffinity(key string, required bool) *corev1.Affinity {
	term := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		TopologyKey:   key,
	}
	if required {
		return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
	}
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}}}
}

func requiredNode(reqs ...corev1.NodeSelectorRequirement) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}}}}
}

// withDevice gives hosts[i] n allocatable of a device-plugin resource.
func withDevice(hosts []corev1.Node, i int, dev string, n int64) []corev1.Node {
	hosts[i].Status.Allocatable = corev1.ResourceList{corev1.ResourceName(dev): *resource.NewQuantity(n, resource.DecimalSI)}
	return hosts
}

func TestSchedule(t *testing.T) {
	web := map[string]string{"app": "web"}
	placedWeb := func(node string) placedVMI {
		return placedVMI{Namespace: "default", Name: "w-" + node, Labels: web, Node: node}
	}
	tests := []struct {
		name     string
		req      scheduleRequest
		hosts    []corev1.Node
		placed   []placedVMI
		wantNode string
		wantMsg  string // substring of the unschedulable message
	}{
		{name: "no hosts", req: scheduleRequest{Namespace: "default"}, hosts: nil, wantMsg: "0/0 nodes"},
		{name: "empty cluster picks first by name", req: scheduleRequest{Namespace: "default"}, wantNode: "harvester-node-0"},
		{name: "least loaded wins", req: scheduleRequest{Namespace: "default"},
			placed: []placedVMI{{Namespace: "default", Node: "harvester-node-0"}}, wantNode: "harvester-node-1"},
		{name: "nodeSelector zone b", req: scheduleRequest{Namespace: "default", NodeSelector: map[string]string{zoneKey: "sim-zone-b"}},
			wantNode: "harvester-node-1"},
		{name: "nodeSelector unmatched", req: scheduleRequest{Namespace: "default", NodeSelector: map[string]string{zoneKey: "nowhere"}},
			wantMsg: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."},
		{name: "affinity In", req: scheduleRequest{Namespace: "default", Affinity: requiredNode(corev1.NodeSelectorRequirement{
			Key: hostnameKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"harvester-node-2"}})}, wantNode: "harvester-node-2"},
		{name: "affinity NotIn", req: scheduleRequest{Namespace: "default", Affinity: requiredNode(corev1.NodeSelectorRequirement{
			Key: zoneKey, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"sim-zone-a"}})}, wantNode: "harvester-node-1"},
		{name: "affinity Exists missing label", req: scheduleRequest{Namespace: "default", Affinity: requiredNode(corev1.NodeSelectorRequirement{
			Key: "gpu", Operator: corev1.NodeSelectorOpExists})}, wantMsg: "3 node(s) didn't match Pod's node affinity/selector"},
		{name: "affinity DoesNotExist", req: scheduleRequest{Namespace: "default", Affinity: requiredNode(corev1.NodeSelectorRequirement{
			Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist})}, wantNode: "harvester-node-0"},
		{name: "matchFields metadata.name", req: scheduleRequest{Namespace: "default", Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"harvester-node-1"}}}}}}}}},
			wantNode: "harvester-node-1"},
		{name: "terms are ORed", req: scheduleRequest{Namespace: "default", Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostnameKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"harvester-node-2"}}}},
			}}}}}, wantNode: "harvester-node-2"},
		{name: "vGPU only where allocatable", req: scheduleRequest{Namespace: "default", Devices: map[string]int64{"nvidia.com/A": 1}},
			hosts: withDevice(testHosts(), 1, "nvidia.com/A", 1), wantNode: "harvester-node-1"},
		{name: "vGPU held elsewhere", req: scheduleRequest{Namespace: "default", Devices: map[string]int64{"nvidia.com/A": 1}},
			hosts:   withDevice(testHosts(), 1, "nvidia.com/A", 1),
			placed:  []placedVMI{{Namespace: "default", Node: "harvester-node-1", Devices: map[string]int64{"nvidia.com/A": 1}}},
			wantMsg: "0/3 nodes are available: 3 Insufficient nvidia.com/A."},
		{name: "cordoned host skipped", req: scheduleRequest{Namespace: "default"},
			hosts: func() []corev1.Node { h := testHosts(); h[0].Spec.Unschedulable = true; return h }(), wantNode: "harvester-node-1"},
		{name: "preferred anti-affinity spreads by host", req: scheduleRequest{Namespace: "default", Labels: web, Affinity: antiAffinity(hostnameKey, false)},
			placed: []placedVMI{placedWeb("harvester-node-0"), placedWeb("harvester-node-1"),
				{Namespace: "default", Node: "harvester-node-2"}, {Namespace: "default", Node: "harvester-node-2"}},
			wantNode: "harvester-node-2"},
		{name: "preferred anti-affinity by zone", req: scheduleRequest{Namespace: "default", Labels: web, Affinity: antiAffinity(zoneKey, false)},
			placed: []placedVMI{placedWeb("harvester-node-0")}, wantNode: "harvester-node-1"},
		{name: "preferred anti-affinity all taken picks fewest", req: scheduleRequest{Namespace: "default", Labels: web, Affinity: antiAffinity(hostnameKey, false)},
			placed:   []placedVMI{placedWeb("harvester-node-0"), placedWeb("harvester-node-1"), placedWeb("harvester-node-1"), placedWeb("harvester-node-2")},
			wantNode: "harvester-node-0"},
		{name: "preferred anti-affinity other namespace ignored", req: scheduleRequest{Namespace: "default", Affinity: antiAffinity(hostnameKey, false)},
			placed: []placedVMI{{Namespace: "other", Labels: web, Node: "harvester-node-0"},
				{Namespace: "default", Node: "harvester-node-1"}, {Namespace: "default", Node: "harvester-node-1"},
				{Namespace: "default", Node: "harvester-node-2"}, {Namespace: "default", Node: "harvester-node-2"}},
			wantNode: "harvester-node-0"},
		{name: "required anti-affinity full", req: scheduleRequest{Namespace: "default", Labels: web, Affinity: antiAffinity(hostnameKey, true)},
			placed:  []placedVMI{placedWeb("harvester-node-0"), placedWeb("harvester-node-1"), placedWeb("harvester-node-2")},
			wantMsg: "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."},
		{name: "required anti-affinity zone", req: scheduleRequest{Namespace: "default", Labels: web, Affinity: antiAffinity(zoneKey, true)},
			placed: []placedVMI{placedWeb("harvester-node-0")}, wantNode: "harvester-node-1"},
		{name: "existing VMI anti-affinity repels", req: scheduleRequest{Namespace: "default", Labels: web},
			placed: []placedVMI{{Namespace: "default", Node: "harvester-node-0", RequiredAntiAffinity: antiAffinity(zoneKey, true).PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution},
				{Namespace: "default", Node: "harvester-node-1"}},
			wantNode: "harvester-node-1"},
		{name: "required pod affinity follows", req: scheduleRequest{Namespace: "default", Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: web}, TopologyKey: hostnameKey}}}}},
			placed: []placedVMI{placedWeb("harvester-node-2")}, wantNode: "harvester-node-2"},
		{name: "required pod affinity nobody", req: scheduleRequest{Namespace: "default", Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: web}, TopologyKey: hostnameKey}}}}},
			wantMsg: "3 node(s) didn't match pod affinity rules"},
		{name: "mixed reasons counted", req: scheduleRequest{Namespace: "default", Labels: web, Affinity: func() *corev1.Affinity {
			a := antiAffinity(hostnameKey, true)
			a.NodeAffinity = requiredNode(corev1.NodeSelectorRequirement{Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"sim-zone-a"}}).NodeAffinity
			return a
		}()}, placed: []placedVMI{placedWeb("harvester-node-0"), placedWeb("harvester-node-2")},
			wantMsg: "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match pod anti-affinity rules."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts := tt.hosts
			if hosts == nil && tt.name != "no hosts" {
				hosts = testHosts()
			}
			got := schedule(tt.req, hosts, tt.placed)
			if got.Node != tt.wantNode {
				t.Fatalf("node = %q (message %q), want %q", got.Node, got.Message, tt.wantNode)
			}
			if tt.wantMsg != "" && !strings.Contains(got.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", got.Message, tt.wantMsg)
			}
			if tt.wantNode != "" && got.Message != "" {
				t.Errorf("scheduled but message = %q", got.Message)
			}
		})
	}
}
