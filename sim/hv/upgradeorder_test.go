package hv

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpgradeOrder: expected orders worked out from Rancher's planner
// (pkg/capr/planner/planner.go fullReconcile: bootstrap, etcd, control
// plane, worker tiers; planentry.go collect: by Machine name), to which
// Harvester v1.8.1's upgradeKubernetes hands the hosts with concurrency 1.
func TestUpgradeOrder(t *testing.T) {
	n := func(name, machine string, labels ...string) corev1.Node {
		l := map[string]string{}
		for _, k := range labels {
			l[k] = "true"
		}
		node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
		if machine != "" {
			node.Annotations = map[string]string{AnnMachine: machine}
		}
		return node
	}
	server := []string{LabelRoleEtcd, LabelRoleControlPlane}
	cases := []struct {
		name  string
		nodes []corev1.Node
		want  []string
	}{
		{"no roles: by host name", []corev1.Node{n("h2", ""), n("h0", ""), n("h1", "")}, []string{"h0", "h1", "h2"}},
		{"servers before workers, by Machine name",
			[]corev1.Node{n("w1", "custom-01"), n("s1", "custom-fe", server...), n("s2", "custom-0a", server...), n("w0", "custom-ff")},
			[]string{"s2", "s1", "w1", "w0"}},
		{"the init node first",
			[]corev1.Node{n("s1", "custom-01", server...), n("s2", "custom-02", append(server, LabelInitNode)...), n("s3", "custom-03", server...)},
			[]string{"s2", "s1", "s3"}},
		{"etcd only (witness) with the etcd tier, control plane only after it",
			[]corev1.Node{n("cp", "custom-00", LabelRoleControlPlane), n("witness", "custom-99", LabelRoleEtcd), n("w", "custom-01")},
			[]string{"witness", "cp", "w"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := UpgradeOrder(c.nodes); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("UpgradeOrder = %v, want %v", got, c.want)
			}
		})
	}
}
