package simtest

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func TestCCMInitializedNode(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{harvester.ZoneKey: "zone-b", harvester.RegionKey: "region-1"}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{
			{IP: "10.52.0.7", IPs: []string{"10.52.0.7", "fe80::1"}},
			{IP: "192.168.9.7"},
		}},
	}
	registered := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{"kubernetes.io/hostname": "m1"},
			Annotations: map[string]string{harvester.AnnProvidedNodeIP: "10.52.0.7"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: harvester.TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute},
		}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.52.0.7"}, {Type: corev1.NodeHostName, Address: "m1"}}},
	}
	n := CCMInitializedNode(registered, "vm-uid-1", vmi)
	if n.Spec.ProviderID != "harvester://vm-uid-1" {
		t.Errorf("providerID %q", n.Spec.ProviderID)
	}
	if n.Labels[harvester.ZoneKey] != "zone-b" || n.Labels[harvester.RegionKey] != "region-1" || n.Labels["kubernetes.io/hostname"] != "m1" {
		t.Errorf("labels %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "node.kubernetes.io/unreachable" {
		t.Errorf("taints %v", n.Spec.Taints)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.52.0.7"}, {Type: corev1.NodeExternalIP, Address: "192.168.9.7"}, {Type: corev1.NodeHostName, Address: "m1"}}
	if !slices.Equal(n.Status.Addresses, want) {
		t.Errorf("addresses %v, want %v", n.Status.Addresses, want)
	}
	if len(registered.Spec.Taints) != 2 || registered.Spec.ProviderID != "" {
		t.Error("the registered node was changed in place")
	}
	// Without the provided-node-ip annotation the addresses stay kubelet's.
	delete(registered.Annotations, harvester.AnnProvidedNodeIP)
	if n := CCMInitializedNode(registered, "u", vmi); !slices.Equal(n.Status.Addresses, registered.Status.Addresses) {
		t.Errorf("addresses without provided-node-ip: %v", n.Status.Addresses)
	}
}
