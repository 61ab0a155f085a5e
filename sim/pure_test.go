package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/harvester-kit/harvester-machine/sim/kubevip"
)

func TestOptionsValidateReportsEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		{"valid", Options{StateDir: "/tmp/x", Hosts: 3, Zones: 2}, nil},
		{"all wrong", Options{Hosts: 0, Zones: 5, BootDelay: -time.Second, IPDelay: -time.Second},
			[]string{"--state-dir", "--hosts", "--zones", "--boot-delay", "--ip-delay"}},
		{"more zones than hosts", Options{StateDir: "d", Hosts: 2, Zones: 3}, []string{"--zones: 3 is out of range: use 1 to the host count (2)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if (err == nil) != (len(tt.want) == 0) {
				t.Fatalf("Validate() = %v, want errors %v", err, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestBuildHostsSpreadsZonesRoundRobin(t *testing.T) {
	nodes := buildHosts(5, 2)
	want := []string{"sim-zone-a", "sim-zone-b", "sim-zone-a", "sim-zone-b", "sim-zone-a"}
	for i, n := range nodes {
		if n.Name != hostName(i) || n.Labels[corev1.LabelTopologyZone] != want[i] || n.Labels[corev1.LabelTopologyRegion] != Region || n.Labels[corev1.LabelHostname] != n.Name {
			t.Errorf("host %d = %s %v", i, n.Name, n.Labels)
		}
	}
}

func TestBuildCRDStatusSubresourceAndScope(t *testing.T) {
	for _, s := range simCRDs {
		crd := buildCRD(s)
		hasStatus := crd.Spec.Versions[0].Subresources != nil
		if hasStatus != s.status {
			t.Errorf("%s: status subresource = %v, want %v", crd.Name, hasStatus, s.status)
		}
		if crd.Name != s.plural+"."+s.group || crd.Spec.Names.ListKind != s.kind+"List" {
			t.Errorf("bad names for %s: %+v", crd.Name, crd.Spec.Names)
		}
	}
	for _, s := range simCRDs {
		crd := buildCRD(s)
		if s.kind == "LoadBalancer" && crd.Spec.Versions[0].Subresources != nil {
			t.Error("LoadBalancer must have no status subresource, as on Harvester")
		}
		if s.group == "loadbalancer.harvesterhci.io" && crd.Spec.Versions[0].Schema.OpenAPIV3Schema.XPreserveUnknownFields != nil {
			t.Errorf("%s must have Harvester's structural schema, not preserve unknown fields", s.kind)
		}
	}
}

func TestVMRowsJoinVMIs(t *testing.T) {
	vm := func(name, status string) unstructured.Unstructured {
		return unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"status":   map[string]any{"printableStatus": status},
		}}
	}
	vmi := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "a", "namespace": "default", "annotations": map[string]any{corev1.LabelTopologyZone: "sim-zone-b"}},
		"status": map[string]any{"phase": "Running", "nodeName": "harvester-node-1",
			"interfaces": []any{map[string]any{"name": "nic-1", "ipAddress": "10.52.0.7"}, map[string]any{"name": "nic-2"}}},
	}}
	rows := vmRows([]unstructured.Unstructured{vm("a", "Running"), vm("b", "Stopped")}, []unstructured.Unstructured{vmi})
	want := []vmRow{
		{"default", "a", "Running", "Running", "harvester-node-1", "sim-zone-b", "10.52.0.7"},
		{"default", "b", "Stopped", "-", "-", "-", "-"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestGuestNodeRows(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"topology.kubernetes.io/zone": "sim-zone-a"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}},
	}
	rows := guestNodeRows("g", nodes)
	want := []guestNodeRow{
		{cluster: "g", node: "a", ready: "NotReady", ip: "-", taints: "-", zone: "-", region: "-"},
		{cluster: "g", node: "b", ready: "Ready", ip: "10.0.0.2", taints: "node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule", zone: "sim-zone-a", region: "-"},
	}
	if len(rows) != 2 || rows[0] != want[0] || rows[1] != want[1] {
		t.Fatalf("rows = %+v\nwant %+v", rows, want)
	}
}

func TestWorkloadSummary(t *testing.T) {
	got := workloadSummary(
		[]appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "harvester-cloud-provider"}}},
		[]appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Name: "kube-vip"}}, {ObjectMeta: metav1.ObjectMeta{Name: "harvester-csi-driver"}}})
	want := "harvester-cloud-provider (Deployment), harvester-csi-driver (DaemonSet), kube-vip (DaemonSet)"
	if strings.Join(got, ", ") != want {
		t.Errorf("workloads %q, want %q", strings.Join(got, ", "), want)
	}
}

func TestLBRows(t *testing.T) {
	l := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "lb1", "namespace": "default", "annotations": map[string]any{"loadbalancer.harvesterhci.io/cluster": "g"}},
		"status": map[string]any{"allocatedAddress": map[string]any{"ipPool": "p", "ip": "10.0.0.9"},
			"conditions": []any{map[string]any{"type": "Ready", "status": "False", "message": "no running backend servers"}}},
	}}
	got := strings.Join(lbRows([]unstructured.Unstructured{l})[0], "|")
	if got != "default|lb1|g|p|10.0.0.9|-|False (no running backend servers)" {
		t.Fatalf("row = %s", got)
	}
}

func TestReadFreezeRequest(t *testing.T) {
	cases := map[string]struct {
		content string
		token   string
		d       time.Duration
		wantErr bool
	}{
		"valid":        {"abc 5s\n", "abc", 5 * time.Second, false},
		"no duration":  {"abc\n", "", 0, true},
		"bad duration": {"abc soon\n", "", 0, true},
		"zero":         {"abc 0s\n", "", 0, true},
		"too long":     {"abc 11m\n", "", 0, true},
	}
	for name, c := range cases {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, freezeRequestFile), []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		token, d, err := readFreezeRequest(dir)
		if (err != nil) != c.wantErr || token != c.token || d != c.d {
			t.Errorf("%s: got %q %s %v", name, token, d, err)
		}
		if _, err := os.Stat(filepath.Join(dir, freezeRequestFile)); !os.IsNotExist(err) {
			t.Errorf("%s: the request was not consumed", name)
		}
	}
}

func TestKubeVIPRows(t *testing.T) {
	got := kubeVIPRows([]kubevip.State{
		{Node: "n0", Phase: "running", Restarts: 0, GratuitousARPs: map[string]int{"198.51.100.10": 3, "198.51.100.9": 1}},
		{Node: "n1", Phase: "exited", Reason: "exit code 0", Restarts: 2, LastError: `checking interface err="eth9 is not valid interface"`},
	})
	want := []string{
		"n0\trunning\t0\t198.51.100.10 x3, 198.51.100.9 x1\t-",
		"n1\texited (exit code 0)\t2\t-\tchecking interface err=\"eth9 is not valid interface\"",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("kubeVIPRows = %q, want %q", got, want)
	}
}
