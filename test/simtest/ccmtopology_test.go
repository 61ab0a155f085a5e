package simtest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Expected values below are written from the cloud provider v0.2.7's
// source (pkg/controller/virtualmachineinstance/controller.go, pkg/utils)
// and k8s.io/cloud-provider v0.33.7 (node/helpers/taints.go,
// controllers/node/node_controller.go), not from this package's code.
const (
	keyZone    = "topology.kubernetes.io/zone"
	keyRegion  = "topology.kubernetes.io/region"
	keyTaint   = "node.cloudprovider.kubernetes.io/uninitialized"
	keyCreator = "harvesterhci.io/creator"
)

func migratedVMI(name, zone string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "guests",
			Labels:      map[string]string{keyCreator: "docker-machine-driver-harvester", "guestcluster.harvesterhci.io/name": "c1"},
			Annotations: map[string]string{keyZone: zone, keyRegion: "r1"}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "harvester-node-1",
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{Completed: true}},
	}
}

func guestNode(name, zone string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{keyZone: zone, keyRegion: "r1"}},
		Spec: corev1.NodeSpec{ProviderID: "harvester://uid-" + name, Taints: taints}}
}

func TestTopologyControllerOnVMIChanged(t *testing.T) {
	prefer := corev1.Taint{Key: keyTaint, Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}
	noAgent := func(context.Context, string, string) (string, error) {
		return "", errors.New("VMI does not have guest agent connected")
	}
	cases := []struct {
		name       string
		vmi        func() *kubevirtv1.VirtualMachineInstance
		nodes      []*corev1.Node
		agent      func(context.Context, string, string) (string, error)
		cluster    string
		wantTaints map[string][]corev1.Taint // node -> taints after
		wantErr    bool
	}{
		{name: "completed migration to another zone", vmi: func() *kubevirtv1.VirtualMachineInstance { return migratedVMI("m1", "zone-b") },
			nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": {prefer}}},
		{name: "region differs, zone same", vmi: func() *kubevirtv1.VirtualMachineInstance {
			v := migratedVMI("m1", "zone-a")
			v.Annotations[keyRegion] = "r2"
			return v
		}, nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": {prefer}}},
		{name: "no migration state counts as completed", vmi: func() *kubevirtv1.VirtualMachineInstance {
			v := migratedVMI("m1", "zone-b")
			v.Status.MigrationState = nil
			return v
		}, nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": {prefer}}},
		{name: "kubelet's NoSchedule taint kept, PreferNoSchedule added", vmi: func() *kubevirtv1.VirtualMachineInstance { return migratedVMI("m1", "zone-b") },
			nodes:      []*corev1.Node{guestNode("m1", "", corev1.Taint{Key: keyTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule})},
			wantTaints: map[string][]corev1.Taint{"m1": {{Key: keyTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}, prefer}}},
		{name: "a PreferNoSchedule taint of another value is updated", vmi: func() *kubevirtv1.VirtualMachineInstance { return migratedVMI("m1", "zone-b") },
			nodes:      []*corev1.Node{guestNode("m1", "zone-a", corev1.Taint{Key: keyTaint, Value: "false", Effect: corev1.TaintEffectPreferNoSchedule})},
			wantTaints: map[string][]corev1.Taint{"m1": {prefer}}},
		{name: "migration still running", vmi: func() *kubevirtv1.VirtualMachineInstance {
			v := migratedVMI("m1", "zone-b")
			v.Status.MigrationState.Completed = false
			return v
		}, nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": nil}},
		{name: "same topology", vmi: func() *kubevirtv1.VirtualMachineInstance { return migratedVMI("m1", "zone-a") },
			nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": nil}},
		{name: "not a node-driver VMI", vmi: func() *kubevirtv1.VirtualMachineInstance {
			v := migratedVMI("m1", "zone-b")
			v.Labels[keyCreator] = "harvester"
			return v
		}, nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": nil}},
		{name: "no annotations at all", vmi: func() *kubevirtv1.VirtualMachineInstance {
			v := migratedVMI("m1", "zone-b")
			v.Annotations = nil
			return v
		}, nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": nil}},
		{name: "another namespace", vmi: func() *kubevirtv1.VirtualMachineInstance {
			v := migratedVMI("m1", "zone-b")
			v.Namespace = "other"
			return v
		}, nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": nil}},
		{name: "being deleted", vmi: func() *kubevirtv1.VirtualMachineInstance {
			v := migratedVMI("m1", "zone-b")
			v.DeletionTimestamp = &metav1.Time{}
			return v
		}, nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": nil}},
		{name: "no guest node of that name: another cluster's VM", vmi: func() *kubevirtv1.VirtualMachineInstance { return migratedVMI("m9", "zone-b") },
			nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": nil}},
		{name: "node found by the agent's hostname, the taint goes to the node named after the VMI",
			vmi:        func() *kubevirtv1.VirtualMachineInstance { return migratedVMI("m1", "zone-b") },
			agent:      func(context.Context, string, string) (string, error) { return "host-1", nil },
			nodes:      []*corev1.Node{guestNode("m1", "zone-b"), guestNode("host-1", "zone-a")},
			wantTaints: map[string][]corev1.Taint{"m1": {prefer}, "host-1": nil}},
		{name: "default cluster name: tainted, then the NAD mapping fails", vmi: func() *kubevirtv1.VirtualMachineInstance { return migratedVMI("m1", "zone-b") },
			cluster: "kubernetes", nodes: []*corev1.Node{guestNode("m1", "zone-a")}, wantTaints: map[string][]corev1.Taint{"m1": {prefer}}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, n := range tc.nodes {
				objs = append(objs, n)
			}
			guest := fake.NewClientset(objs...)
			agent := tc.agent
			if agent == nil {
				agent = noAgent
			}
			cluster := tc.cluster
			if cluster == "" {
				cluster = "c1"
			}
			c := &TopologyController{Namespace: "guests", Cluster: cluster, Guest: guest, GuestOSInfo: agent, NodeToVM: &sync.Map{}}
			err := c.OnVMIChanged(t.Context(), tc.vmi())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			for name, want := range tc.wantTaints {
				n, err := guest.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(n.Spec.Taints, want) {
					t.Errorf("node %s taints %v, want %v", name, n.Spec.Taints, want)
				}
			}
			if tc.agent != nil {
				if v, ok := c.NodeToVM.Load("host-1"); !ok || v != "m1" {
					t.Errorf("nodeToVMName[host-1] = %v, want m1", v)
				}
			}
		})
	}
}

// TestTopologyControllerNADMapping: the ConfigMap holds the Multus network
// -> interface pairs common to the Running, settled VMIs reporting
// interfaces.
func TestTopologyControllerNADMapping(t *testing.T) {
	withNICs := func(name string, nics map[string]string, phase kubevirtv1.VirtualMachineInstancePhase) *kubevirtv1.VirtualMachineInstance {
		v := migratedVMI(name, "zone-a")
		v.Status.Phase = phase
		for _, net := range slices.Sorted(maps.Keys(nics)) {
			n := "nic-" + net
			v.Spec.Networks = append(v.Spec.Networks, kubevirtv1.Network{Name: n,
				NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: net}}})
			v.Status.Interfaces = append(v.Status.Interfaces, kubevirtv1.VirtualMachineInstanceNetworkInterface{Name: n, InterfaceName: nics[net]})
		}
		return v
	}
	vmis := []*kubevirtv1.VirtualMachineInstance{
		withNICs("m1", map[string]string{"default/mgmt": "enp1s0", "default/data": "enp2s0"}, kubevirtv1.Running),
		withNICs("m2", map[string]string{"default/mgmt": "enp1s0", "default/data": "enp3s0"}, kubevirtv1.Running),
		withNICs("m3", map[string]string{"default/other": "enp1s0"}, kubevirtv1.Scheduling), // not Running: ignored
	}
	guest := fake.NewClientset(guestNode("m1", "zone-a"))
	c := &TopologyController{Namespace: "guests", Cluster: "c1", Guest: guest,
		GuestOSInfo: func(context.Context, string, string) (string, error) { return "", errors.New("none") },
		listVMIs:    func() ([]*kubevirtv1.VirtualMachineInstance, error) { return vmis, nil }}
	if err := c.OnVMIChanged(t.Context(), vmis[0]); err != nil {
		t.Fatal(err)
	}
	cm, err := guest.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "harvester-nad-mapping", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["interface-nad-mapping"]; got != `{"default/mgmt":"enp1s0"}` {
		t.Errorf("mapping %q", got)
	}
	// No qualifying VMI: the value is cleared.
	vmis = vmis[2:]
	if err := c.OnVMIChanged(t.Context(), migratedVMI("m1", "zone-a")); err != nil {
		t.Fatal(err)
	}
	cm, _ = guest.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "harvester-nad-mapping", metav1.GetOptions{})
	if v, ok := cm.Data["interface-nad-mapping"]; !ok || v != "" {
		t.Errorf("mapping after no qualifying VMI: %q (present %v)", v, ok)
	}
}

// TestCloudNodeControllerReinitialises: a node carrying the
// PreferNoSchedule taint is initialised again from its VMI: new zone in the
// GA and beta labels, every taint of the key gone, providerID kept.
func TestCloudNodeControllerReinitialises(t *testing.T) {
	node := guestNode("m1", "zone-a", corev1.Taint{Key: keyTaint, Value: "true", Effect: corev1.TaintEffectPreferNoSchedule},
		corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule})
	node.Labels["failure-domain.beta.kubernetes.io/zone"] = "zone-a"
	guest := fake.NewClientset(node)
	vm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "m1", "namespace": "guests", "uid": "uid-new"}}}
	vmi := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]any{"name": "m1", "namespace": "guests", "annotations": map[string]any{keyZone: "zone-b", keyRegion: "r1"}}}}
	hv := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), vm, vmi)
	c := &CloudNodeController{Guest: guest, Harvester: hv, Namespace: "guests"}
	if err := c.syncNode(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	got, _ := guest.CoreV1().Nodes().Get(t.Context(), "m1", metav1.GetOptions{})
	for k, want := range map[string]string{keyZone: "zone-b", "failure-domain.beta.kubernetes.io/zone": "zone-b", keyRegion: "r1",
		"failure-domain.beta.kubernetes.io/region": "r1"} {
		if got.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], want)
		}
	}
	if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints %v, want only dedicated", got.Spec.Taints)
	}
	if got.Spec.ProviderID != "harvester://uid-m1" {
		t.Errorf("providerID %q changed", got.Spec.ProviderID)
	}
}

// TestReconciledLabels: the beta labels are the source of truth for the GA
// ones once a node is initialised.
func TestReconciledLabels(t *testing.T) {
	got := ReconciledLabels(map[string]string{"failure-domain.beta.kubernetes.io/zone": "b", keyZone: "a", keyRegion: "r"})
	if !maps.Equal(got, map[string]string{keyZone: "b"}) {
		t.Errorf("got %v", got)
	}
	if got := ReconciledLabels(map[string]string{keyZone: "a"}); got != nil {
		t.Errorf("GA only: %v", got)
	}
}
