package machine

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestDescribeVMINeverPanics(t *testing.T) {
	if s := DescribeVMI(nil); s == "" {
		t.Error("empty description")
	}
	v := &kubevirtv1.VirtualMachineInstance{}
	v.Status.Phase = kubevirtv1.Running
	v.Status.NodeName = "harvester-node-1"
	v.Annotations = map[string]string{corev1.LabelTopologyZone: "sim-zone-b"}
	if s := DescribeVMI(v); !strings.Contains(s, "harvester-node-1 (zone sim-zone-b)") || !strings.Contains(s, "waiting for the guest") {
		t.Errorf("description: %s", s)
	}
}
