package harvester

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDrainPossible: Harvester v1.8's drainhelper.DrainPossible, the
// expected errors read off its source: the role labels count by presence
// (selection.Exists), a host with neither passes, one member alone is
// errSingleControlPlaneNode, and anything but exactly three members
// without harvesterhci.io/maintain-status (defaultHACPCount) is
// errHAControlPlaneNode, whatever the annotation's value.
func TestDrainPossible(t *testing.T) {
	node := func(name string, kv ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "harvesterhci.io/maintain-status" {
				n.Annotations[kv[i]] = kv[i+1]
			} else {
				n.Labels[kv[i]] = kv[i+1]
			}
		}
		return n
	}
	cpEtcd := func(name string, kv ...string) corev1.Node {
		return node(name, append([]string{"node-role.kubernetes.io/control-plane", "true", "node-role.kubernetes.io/etcd", "true"}, kv...)...)
	}
	const single = "draining of this node is not possible: single controlplane cluster, cannot place controlplane in maintenance mode"
	const ha = "draining of this node is not possible: another controlplane is already in maintenance mode, cannot place current node in maintenance mode"
	cases := []struct {
		name  string
		hosts []corev1.Node
		want  string // "" for allowed
	}{
		{"three control-plane hosts, none in maintenance", []corev1.Node{cpEtcd("a"), cpEtcd("b"), cpEtcd("c")}, ""},
		{"another one in maintenance (running)", []corev1.Node{cpEtcd("a"), cpEtcd("b", "harvesterhci.io/maintain-status", "running"), cpEtcd("c")}, ha},
		{"another one in maintenance (completed)", []corev1.Node{cpEtcd("a"), cpEtcd("b"), cpEtcd("c", "harvesterhci.io/maintain-status", "completed")}, ha},
		{"an empty maintain-status counts", []corev1.Node{cpEtcd("a"), cpEtcd("b", "harvesterhci.io/maintain-status", ""), cpEtcd("c")}, ha},
		{"the only control-plane host", []corev1.Node{cpEtcd("a"), node("b"), node("c")}, single},
		{"a single-host cluster", []corev1.Node{cpEtcd("a")}, single},
		{"a worker always passes", []corev1.Node{node("a"), cpEtcd("b", "harvesterhci.io/maintain-status", "running"), cpEtcd("c")}, ""},
		{"two control-plane hosts with a witness (etcd only)", []corev1.Node{cpEtcd("a"), cpEtcd("b"), node("w", "node-role.kubernetes.io/etcd", "true", "node-role.harvesterhci.io/witness", "true")}, ""},
		{"a label counts by presence, not value", []corev1.Node{node("a", "node-role.kubernetes.io/control-plane", "false"), cpEtcd("b"), cpEtcd("c")}, ""},
		{"two members and none in maintenance: not three", []corev1.Node{cpEtcd("a"), cpEtcd("b"), node("c")}, ha},
		{"four members and none in maintenance: not three", []corev1.Node{cpEtcd("a"), cpEtcd("b"), cpEtcd("c"), cpEtcd("d")}, ha},
		{"four members, one in maintenance: three left", []corev1.Node{cpEtcd("a"), cpEtcd("b"), cpEtcd("c"), cpEtcd("d", "harvesterhci.io/maintain-status", "running")}, ""},
		{"the host itself in maintenance", []corev1.Node{cpEtcd("a", "harvesterhci.io/maintain-status", "running"), cpEtcd("b"), cpEtcd("c")}, ha},
		{"an etcd-only host is a member", []corev1.Node{node("a", "node-role.kubernetes.io/etcd", "true"), node("b"), node("c")}, single},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := DrainPossible(&tc.hosts[0], tc.hosts, nil)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrDrainNotPossible) {
					t.Errorf("%v is not ErrDrainNotPossible", err)
				}
			}
			if got != tc.want {
				t.Errorf("DrainPossible = %q, want %q", got, tc.want)
			}
		})
	}
}
