package hv

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func host(name string, labels map[string]string, ready, unschedulable bool) corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Unschedulable: unschedulable},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
}

func vmiOn(name, node string, edit func(*kubevirtv1.VirtualMachineInstance)) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	v.Status.NodeName = node
	if edit != nil {
		edit(v)
	}
	return v
}

func requireZone(zones ...string) func(*kubevirtv1.VirtualMachineInstance) {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}}}}}
	}
}

// badTermThen adds, before the VMI's terms, one that does not parse (Gt
// wants one integer).
func badTermThen(v *kubevirtv1.VirtualMachineInstance) {
	bad := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpGt, Values: []string{"x"}}}}
	sel := v.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	sel.NodeSelectorTerms = append([]corev1.NodeSelectorTerm{bad}, sel.NodeSelectorTerms...)
}

// TestNonLiveMigratable: expected values from Harvester v1.8.0's
// GetAllNonLiveMigratableVMINames and migratableByNodeAffinity
// (pkg/util/virtualmachineinstance/virtualmachineinstance.go), with
// component-helpers' MatchNodeSelectorTerms (lazy parse errors).
func TestNonLiveMigratable(t *testing.T) {
	zone := func(z string) map[string]string { return map[string]string{corev1.LabelTopologyZone: z} }
	witness := host("w", map[string]string{LabelWitnessHost: "true", corev1.LabelTopologyZone: "z9"}, true, false)
	two := []corev1.Node{host("a", zone("z1"), true, false), host("b", zone("z2"), true, false)}
	cordoned := []corev1.Node{host("a", zone("z1"), true, false), host("b", zone("z2"), true, true)}
	cases := []struct {
		name    string
		nodes   []corev1.Node
		vmi     *kubevirtv1.VirtualMachineInstance
		want    []string
		wantErr bool
	}{
		{"one host and a witness: every VMI", []corev1.Node{host("a", zone("z1"), true, false), witness}, vmiOn("v", "a", nil), []string{"ns/v"}, false},
		{"free VMI", two, vmiOn("v", "a", nil), nil, false},
		{"any nodeSelector, even an empty one", two, vmiOn("v", "a", func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.NodeSelector = map[string]string{} }), []string{"ns/v"}, false},
		{"host devices", two, vmiOn("v", "a", func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "d", DeviceName: "x"}}
		}), []string{"ns/v"}, false},
		{"GPUs are not looked at", two, vmiOn("v", "a", func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "g", DeviceName: "x"}}
		}), nil, false},
		{"the other host is cordoned", cordoned, vmiOn("v", "a", nil), []string{"ns/v"}, false},
		{"affinity only its own host meets", two, vmiOn("v", "a", requireZone("z1")), []string{"ns/v"}, false},
		{"the witness does not count", append(two, witness), vmiOn("v", "a", requireZone("z9")), []string{"ns/v"}, false},
		{"a bad term beside a matching one: migratable", two, vmiOn("v", "a", func(v *kubevirtv1.VirtualMachineInstance) {
			requireZone("z2")(v)
			badTermThen(v)
		}), nil, false},
		{"a bad term and no match: error", two, vmiOn("v", "a", func(v *kubevirtv1.VirtualMachineInstance) {
			requireZone("z7")(v)
			badTermThen(v)
		}), nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NonLiveMigratable([]*kubevirtv1.VirtualMachineInstance{c.vmi}, c.nodes)
			if (err != nil) != c.wantErr || (!c.wantErr && !reflect.DeepEqual(got, c.want)) {
				t.Fatalf("NonLiveMigratable = %v, %v; want %v (error %v)", got, err, c.want, c.wantErr)
			}
		})
	}
}
