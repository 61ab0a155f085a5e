package power

import (
	"testing"

	"github.com/rancher/machine/libmachine/state"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

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
