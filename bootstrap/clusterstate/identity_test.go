package clusterstate

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

func identityVM(ns, name, cluster, uid string) kubevirtv1.VirtualMachine {
	return kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid),
		Labels: map[string]string{harvester.LabelGuestCluster: harvester.LabelValue(cluster)}}}
}

func providerNode(name, providerID string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

// Issue 33, item 8 and issue 41: a guest is taken for the named cluster
// only on evidence (a node on a VM of the cluster, or a Service whose UID
// named a LoadBalancer of it), and refused otherwise, saying why and what
// would be valid. gc and doctor look at LoadBalancers, maintenance-check
// only at nodes (of every namespace without --namespace).
func TestVerifyGuest(t *testing.T) {
	vms := []kubevirtv1.VirtualMachine{identityVM("default", "a-p-a1", "a", "vm-a1"), identityVM("default", "b-p-b1", "b", "vm-b1"),
		identityVM("other", "c4-p-1", "c4", "vm-c4"), {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain", UID: "vm-plain"}}}
	lb := lbapi.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Name: CloudProviderName("a", "default", "web", "u1"), Namespace: "default",
		Labels: map[string]string{harvester.LabelLBCluster: "a", harvester.LabelLBServiceNamespace: "default", harvester.LabelLBServiceName: "web"}}}
	web := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	byLB := Identity{Target: Target{Cluster: "a", Namespace: "default"}, VMs: vms, ByLoadBalancer: true, LoadBalancers: []lbapi.LoadBalancer{lb}}
	byNodes := Identity{Target: Target{Cluster: "a"}, VMs: vms}
	valid := "valid: the kubeconfig of cluster a, whose nodes' providerIDs harvester://<UID> name VMs labelled " + harvester.LabelGuestCluster + "=a"
	cases := []struct {
		name  string
		id    Identity
		nodes []corev1.Node
		svcs  []corev1.Service
		want  []string // substrings of the refusal; none: accepted
	}{
		{"a node runs on a VM of the cluster", byLB, []corev1.Node{providerNode("n1", "harvester://vm-a1")}, nil, nil},
		{"the same, every namespace", byNodes, []corev1.Node{providerNode("n1", "harvester://vm-a1"), providerNode("n2", "")}, nil, nil},
		{"a Service's UID named a LoadBalancer of the cluster", byLB, nil, []corev1.Service{web}, nil},
		{"a node runs on another cluster's VM", byLB, []corev1.Node{providerNode("n1", "harvester://vm-a1"), providerNode("n2", "harvester://vm-b1")}, nil,
			[]string{"node n2 runs on VM default/b-p-b1, not labelled for cluster a (labelled for cluster b)", valid + " or one of whose Services'"}},
		{"every node on another cluster's VMs, every namespace", byNodes, []corev1.Node{providerNode("c4-p-1", "harvester://vm-c4")}, nil,
			[]string{"cannot be shown to be the named cluster a: node c4-p-1 runs on VM other/c4-p-1, not labelled for cluster a (labelled for cluster c4)", valid + "; check --guest-kubeconfig"}},
		{"a node on an unlabelled VM", byNodes, []corev1.Node{providerNode("n1", "harvester://vm-plain")}, nil, []string{"(labelled for no cluster)"}},
		{"no evidence", byLB, []corev1.Node{providerNode("n1", "harvester://elsewhere"), providerNode("n2", "")}, []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u9"}}},
			[]string{"none of its 2 nodes has a providerID harvester://<UID> of a VM of the cluster in default (1 there), and none of its 1 Services", valid}},
		{"no evidence by nodes alone: Services are not looked at", byNodes, []corev1.Node{providerNode("n1", "")}, []corev1.Service{web},
			[]string{"none of its 1 nodes has a providerID harvester://<UID> of a VM of the cluster in any namespace (1 there); " + valid + "; check"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := VerifyGuest(c.id, &Guest{Nodes: c.nodes, Services: c.svcs})
			if len(c.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrNotTheCluster) {
				t.Fatalf("VerifyGuest = %v, want ErrNotTheCluster", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("VerifyGuest = %v\nwant %q in it", err, w)
				}
			}
		})
	}
}

// TestVerifyGuestSaysWhyNothingWasSeen: a listing error is part of the why.
func TestVerifyGuestSaysWhyNothingWasSeen(t *testing.T) {
	err := VerifyGuest(Identity{Target: Target{Cluster: "a", Namespace: "default"}, VMsFailed: "list VirtualMachines: forbidden"},
		&Guest{Errors: map[string]string{KindNode: "list Nodes in the guest cluster: forbidden"}})
	for _, w := range []string{"(list Nodes in the guest cluster: forbidden)", "(list VirtualMachines: forbidden)"} {
		if !errors.Is(err, ErrNotTheCluster) || !strings.Contains(err.Error(), w) {
			t.Errorf("VerifyGuest = %v, want %q", err, w)
		}
	}
}

// TestIdentities: gc and doctor prove by VMs and LoadBalancers of the
// namespace; maintenance-check by the VMs it listed, for --cluster-name.
func TestIdentities(t *testing.T) {
	h := Harvester{Target: Target{Cluster: "a", Namespace: "ns"}, VMs: []kubevirtv1.VirtualMachine{{}}, LoadBalancers: []lbapi.LoadBalancer{{}},
		Errors: map[string]string{KindVM: "boom"}}
	if id := h.Identity(); id.Target != h.Target || len(id.VMs) != 1 || !id.ByLoadBalancer || len(id.LoadBalancers) != 1 || id.VMsFailed != "boom" {
		t.Errorf("Harvester.Identity = %+v", id)
	}
	hosts := Hosts{Namespace: "", GuestCluster: "c4", VMs: []kubevirtv1.VirtualMachine{{}, {}}}
	if id := hosts.GuestIdentity(); id.Target != (Target{Cluster: "c4"}) || len(id.VMs) != 2 || id.ByLoadBalancer {
		t.Errorf("Hosts.GuestIdentity = %+v", id)
	}
}
