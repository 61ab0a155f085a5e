package driver

import (
	"strings"
	"testing"

	"github.com/rancher/machine/libmachine/state"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestMachineLabels(t *testing.T) {
	long := strings.Repeat("verylongclustername", 5)
	cases := []struct {
		name, ns, machine, cluster string
		want                       map[string]string
	}{
		{"rancher names", "default", "c1-pool1-x7k2p", "c1", map[string]string{
			LabelMachineSet: "default-c1-pool1", LabelNodePool: "pool1", LabelGuestCluster: "c1", LabelVMName: "c1-pool1-x7k2p"}},
		{"rancher v2 names", "default", "c1-pool1-7d9f8-x7k2p", "c1", map[string]string{
			LabelMachineSet: "default-c1-pool1-7d9f8", LabelNodePool: "pool1-7d9f8"}},
		{"no dash", "default", "single", "c1", map[string]string{LabelMachineSet: "default-single", LabelNodePool: "single"}},
		{"no cluster", "default", "a-b", "", map[string]string{LabelMachineSet: "default-a"}},
		{"trailing dash", "default", "a-", "", map[string]string{LabelMachineSet: "default-a"}},
		{"leading dash", "ns", "-a", "", map[string]string{LabelMachineSet: "ns--a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := MachineLabels(tc.ns, tc.machine, tc.cluster)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if got[LabelCreator] != CreatorValue {
				t.Errorf("creator label missing")
			}
			if tc.cluster == "" {
				if _, ok := got[LabelGuestCluster]; ok {
					t.Errorf("guest cluster label without cluster")
				}
			}
			for k, v := range got {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q invalid: %v", k, v, errs)
				}
			}
		})
	}
	got := MachineLabels("default", long+"-pool-abc", long)
	for k, v := range got {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 || len(v) > 63 {
			t.Errorf("long names: label %s=%q invalid: %v", k, v, errs)
		}
	}
}

func TestLabelValue(t *testing.T) {
	a := LabelValue(strings.Repeat("x", 70) + "a")
	b := LabelValue(strings.Repeat("x", 70) + "b")
	if a == b || len(a) != 63 {
		t.Errorf("long values must stay distinct and 63 long: %q %q", a, b)
	}
	for _, in := range []string{"", "-", "ä-ö", "a/b c", "__x__", strings.Repeat("-", 80) + "z"} {
		if v := LabelValue(in); len(validation.IsValidLabelValue(v)) > 0 {
			t.Errorf("LabelValue(%q) = %q is invalid", in, v)
		}
	}
}

func TestMergeAffinity(t *testing.T) {
	def := MergeAffinity(nil, "default-c1-pool1")
	terms := def.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" ||
		terms[0].PodAffinityTerm.LabelSelector.MatchLabels[LabelMachineSet] != "default-c1-pool1" {
		t.Fatalf("default anti-affinity: %+v", def)
	}
	user := &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}},
		PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 5, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone"}}}},
	}
	merged := MergeAffinity(user, "s")
	if merged.NodeAffinity == nil || len(merged.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 {
		t.Errorf("user affinity not kept: %+v", merged)
	}
	if len(user.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("input modified")
	}
	if again := MergeAffinity(merged, "s"); len(again.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 2 {
		t.Errorf("default term added twice")
	}
}

func TestSelectAddress(t *testing.T) {
	type ifc = kubevirtv1.VirtualMachineInstanceNetworkInterface
	cases := []struct {
		name   string
		ifaces []ifc
		want   string
	}{
		{"nil", nil, ""},
		{"empty interface", []ifc{{}}, ""},
		{"ipv4", []ifc{{IP: "10.0.0.5", IPs: []string{"10.0.0.5"}}}, "10.0.0.5"},
		{"link-local skipped", []ifc{{IPs: []string{"fe80::1", "169.254.1.1", "10.0.0.7"}}}, "10.0.0.7"},
		{"ipv4 before earlier ipv6", []ifc{{IPs: []string{"2001:db8::5"}}, {IPs: []string{"192.168.1.9"}}}, "192.168.1.9"},
		{"ipv6 only", []ifc{{IPs: []string{"fe80::2", "2001:db8::7"}}}, "2001:db8::7"},
		{"cidr form", []ifc{{IP: "10.1.2.3/24"}}, "10.1.2.3"},
		{"garbage and loopback", []ifc{{IP: "nope", IPs: []string{"127.0.0.1", "::1", "0.0.0.0"}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SelectAddress(tc.ifaces)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("got %q %v, want %q", got, ok, tc.want)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	now := metav1.Now()
	vmi := func(p kubevirtv1.VirtualMachineInstancePhase) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: p}}
	}
	deleting := vmi(kubevirtv1.Running)
	deleting.DeletionTimestamp = &now
	cases := []struct {
		name string
		vmi  *kubevirtv1.VirtualMachineInstance
		want state.State
	}{
		{"no vmi", nil, state.Stopped},
		{"unset", vmi(""), state.Starting},
		{"pending", vmi(kubevirtv1.Pending), state.Starting},
		{"scheduling", vmi(kubevirtv1.Scheduling), state.Starting},
		{"scheduled", vmi(kubevirtv1.Scheduled), state.Starting},
		{"running", vmi(kubevirtv1.Running), state.Running},
		{"succeeded", vmi(kubevirtv1.Succeeded), state.Stopped},
		{"failed", vmi(kubevirtv1.Failed), state.Error},
		{"unknown", vmi(kubevirtv1.Unknown), state.None},
		{"deleting", deleting, state.Stopping},
	}
	for _, tc := range cases {
		if got := StateOf(tc.vmi); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDescribeVMINeverPanics(t *testing.T) {
	if s := describeVMI(nil); s == "" {
		t.Error("empty description")
	}
	v := &kubevirtv1.VirtualMachineInstance{}
	v.Status.Phase = kubevirtv1.Running
	v.Status.NodeName = "harvester-node-1"
	v.Annotations = map[string]string{corev1.LabelTopologyZone: "sim-zone-b"}
	if s := describeVMI(v); !strings.Contains(s, "harvester-node-1 (zone sim-zone-b)") || !strings.Contains(s, "waiting for the guest") {
		t.Errorf("description: %s", s)
	}
}

func TestAPIErrorUnauthorized(t *testing.T) {
	err := apiError("get VM", errUnauthorized())
	if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "5827") || !strings.Contains(err.Error(), "expired") {
		t.Errorf("unclear 401 error: %v", err)
	}
}

func errUnauthorized() error {
	return apierrors.NewUnauthorized("token expired")
}
