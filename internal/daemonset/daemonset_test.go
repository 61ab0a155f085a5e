package daemonset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func affinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func TestWhyNotOn(t *testing.T) {
	node := func(labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	cp := map[string]string{"node-role.kubernetes.io/control-plane": "true"}
	cases := []struct {
		name string
		spec corev1.PodSpec
		node *corev1.Node
		want string
	}{
		{"no constraints", corev1.PodSpec{}, node(nil), ""},
		{"nodeSelector", corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}, node(cp), "nodeSelector disk=ssd"},
		{"either term", corev1.PodSpec{Affinity: affinity(expr("node-role.kubernetes.io/controlplane", corev1.NodeSelectorOpExists),
			expr("node-role.kubernetes.io/control-plane", corev1.NodeSelectorOpExists))}, node(cp), ""},
		{"no term", corev1.PodSpec{Affinity: affinity(expr("zone", corev1.NodeSelectorOpIn, "a"))}, node(cp), "no label its required node affinity asks for"},
		// Kubernetes' node affinity (component-helpers nodeaffinity, which
		// the scheduler and the DaemonSet controller call): Gt compares
		// integers, matchFields metadata.name names the node.
		{"Gt", corev1.PodSpec{Affinity: affinity(expr("cores", corev1.NodeSelectorOpGt, "4"))}, node(map[string]string{"cores": "8"}), ""},
		{"Gt not met", corev1.PodSpec{Affinity: affinity(expr("cores", corev1.NodeSelectorOpGt, "8"))}, node(map[string]string{"cores": "8"}), "no label its required node affinity asks for"},
		{"matchFields another node", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}})}, node(cp), "no label its required node affinity asks for"},
		{"matchFields this node", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}}})}, node(cp), ""},
		{"NotIn without the label", corev1.PodSpec{Affinity: affinity(expr("zone", corev1.NodeSelectorOpNotIn, "a"))}, node(nil), ""},
		{"uninitialized", corev1.PodSpec{}, node(nil, corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}),
			"taint node.cloudprovider.kubernetes.io/uninitialized:NoSchedule not tolerated"},
		{"unreachable: the controller's toleration", corev1.PodSpec{}, node(nil, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}), ""},
		{"PreferNoSchedule", corev1.PodSpec{}, node(nil, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), ""},
		{"the pod's toleration", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists}}},
			node(cp, corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}), ""},
	}
	for _, c := range cases {
		if got := WhyNotOn(c.spec, c.node); got != c.want {
			t.Errorf("%s: WhyNotOn = %q, want %q", c.name, got, c.want)
		}
	}
}
