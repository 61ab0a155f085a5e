package harness

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStateDiff(t *testing.T) {
	up := "Ready=True unschedulable=false taints=[] maintain-status=\"\""
	before := state{vms: []string{"default/a"}, hosts: map[string]string{"h0": up, "h1": up}, faults: map[string]string{}, policies: nil}
	cases := []struct {
		name  string
		after state
		want  []string // each in the diff; none: no diff
	}{
		{"as found, a VM of before deleted", state{hosts: map[string]string{"h0": up, "h1": up}, faults: map[string]string{}}, nil},
		{"everything left", state{
			vms:      []string{"default/a", "ns1/b", "ns2/c"},
			hosts:    map[string]string{"h0": up, "h1": "Ready=Unknown unschedulable=true taints=[] maintain-status=\"\""},
			faults:   map[string]string{"no-ip": "default/x-*"},
			policies: []string{"harvester-sim-reject-secrets"},
		}, []string{"VMs left: ns1/b, ns2/c", "host h1: Ready=Unknown unschedulable=true", "faults map[no-ip:default/x-*]",
			"admission policies left: harvester-sim-reject-secrets"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := before.diff(c.after)
			if len(c.want) == 0 && got != "" {
				t.Fatalf("diff = %q, want none", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("diff %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestHostState(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"harvesterhci.io/maintain-status": "running"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{
			{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule},
			{Key: "kubevirt.io/drain", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	want := `Ready=True unschedulable=true taints=[kubevirt.io/drain:NoSchedule node.kubernetes.io/unschedulable:NoSchedule] maintain-status="running"`
	if got := hostState(n); got != want {
		t.Errorf("hostState = %s, want %s", got, want)
	}
}
