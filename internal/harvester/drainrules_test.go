package harvester

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Expected values from Harvester v1.8.0's source:
// pkg/util/virtualmachineinstance (GetAllNonLiveMigratableVMINames,
// migratableByNodeAffinity) and pkg/controller/master/nodedrain
// (FindNonMigratableVMS, CheckVMISchedulingRequirements, isNodeReady).

func drainHost(name, zone string, mod ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": zone}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mod {
		m(&n)
	}
	return n
}

func zoneAffinity(zone string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
}

func TestUpgradeStopReason(t *testing.T) {
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	notReady := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	witness := func(n *corev1.Node) { n.Labels["node-role.harvesterhci.io/witness"] = "true" }
	three := []corev1.Node{drainHost("a", "1"), drainHost("b", "2"), drainHost("c", "1")}
	vmi := func(mod func(*kubevirtv1.VirtualMachineInstance)) *kubevirtv1.VirtualMachineInstance {
		v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v"}}
		if mod != nil {
			mod(v)
		}
		return v
	}
	for _, tc := range []struct {
		name  string
		vmi   *kubevirtv1.VirtualMachineInstance
		nodes []corev1.Node
		want  string
	}{
		{"plain, other hosts", vmi(nil), three, ""},
		{"one host besides a witness", vmi(nil), []corev1.Node{drainHost("a", "1"), drainHost("w", "1", witness)}, "the only host: every VM is stopped"},
		{"an empty nodeSelector still counts (non-nil)", vmi(func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.NodeSelector = map[string]string{} }), three, "it has a nodeSelector"},
		{"host devices", vmi(func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "d", DeviceName: "x/y"}}
		}), three, "it has host devices"},
		{"vGPUs are not looked at", vmi(func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "g", DeviceName: "x/y"}}
		}), three, ""},
		{"affinity matched by another schedulable host", vmi(func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.Affinity = zoneAffinity("1") }), three, ""},
		{"affinity matched only by a cordoned host", vmi(func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.Affinity = zoneAffinity("1") }),
			[]corev1.Node{drainHost("a", "1"), drainHost("b", "2"), drainHost("c", "1", cordoned)}, "no other schedulable host matches its required node affinity"},
		{"a NotReady host still counts (readiness is not looked at)", vmi(func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.Affinity = zoneAffinity("1") }),
			[]corev1.Node{drainHost("a", "1"), drainHost("c", "1", notReady)}, ""},
	} {
		got, err := UpgradeStopReason(tc.vmi, "a", tc.nodes)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	// migratableByNodeAffinity matches with MatchNodeSelectorTerms
	// (component-helpers): a term that does not parse (Gt wants one
	// integer) is skipped while another term matches; it is an error as
	// soon as a schedulable other host matches no term (the loop does not
	// stop at a match), and nothing when there is no such host to try.
	badTerm := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpGt, Values: []string{"x"}}}}
	withBad := func(zone string) *kubevirtv1.VirtualMachineInstance {
		return vmi(func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Affinity = zoneAffinity(zone)
			sel := v.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			sel.NodeSelectorTerms = append([]corev1.NodeSelectorTerm{badTerm}, sel.NodeSelectorTerms...)
		})
	}
	if got, err := UpgradeStopReason(withBad("2"), "a", three[:2]); err != nil || got != "" {
		t.Errorf("bad term beside a matching one: %q, %v; want not stopped", got, err)
	}
	if _, err := UpgradeStopReason(withBad("2"), "a", three); err == nil {
		t.Error("bad term, a later host matching no term: no error")
	}
	if _, err := UpgradeStopReason(withBad("9"), "a", three); err == nil {
		t.Error("bad term and no match: no error")
	}
	cordonedOthers := []corev1.Node{drainHost("a", "1"), drainHost("b", "2", cordoned)}
	if got, err := UpgradeStopReason(withBad("9"), "a", cordonedOthers); err != nil || got != UpgradeStopNodeAffinity {
		t.Errorf("bad term, no schedulable other host: %q, %v; want %q", got, err, UpgradeStopNodeAffinity)
	}
}

func TestNonMigratableKeys(t *testing.T) {
	notReady := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	nodes := []corev1.Node{drainHost("a", "1"), drainHost("b", "2"), drainHost("c", "1", notReady)}
	gpu := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "g"}}
	gpu.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse, Reason: "HostDeviceNotLiveMigratable"}}
	gpu.Spec.Affinity = zoneAffinity("1") // c is the only other zone-1 host, and it is NotReady
	if got, err := NonMigratableKeys(gpu, "a", nodes, nil); err != nil || !slices.Equal(got, []string{"HostDeviceNotLiveMigratable", "NodeSchedulingRequirementsNotMet"}) {
		t.Errorf("keys %v, %v", got, err)
	}
	free := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "f"}}
	if got, _ := NonMigratableKeys(free, "a", nodes, nil); len(got) != 0 {
		t.Errorf("free VM keys %v", got)
	}
	if got, _ := NonMigratableKeys(free, "a", nodes, func(h string) bool { return h == "b" }); !slices.Equal(got, []string{"NodeSchedulingRequirementsNotMet"}) {
		t.Errorf("with b drained too: %v", got)
	}
	sel := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	sel.Spec.NodeSelector = map[string]string{"zone": "2"}
	if got, _ := NonMigratableKeys(sel, "a", nodes, nil); len(got) != 0 {
		t.Errorf("nodeSelector matched by b: %v", got)
	}
}
