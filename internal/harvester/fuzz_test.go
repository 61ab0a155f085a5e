package harvester

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzMachineLabels: whatever the machine, cluster and namespace names,
// every label value is valid, and a cluster name is either the label
// value unchanged or rejected.
func FuzzMachineLabels(f *testing.F) {
	for _, s := range [][3]string{{"default", "c1-pool1-x7k2p", "c1"}, {"ns", "c1-pool1-7d9f8-x7k2p", "c1"}, {"default", "ünï-a-b", "ünï"},
		{"default", strings.Repeat("m", 300), strings.Repeat("c", 300)}, {"", "-", "-"}, {"a\nb", "a\"b-c", "x: y"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, ns, machine, cluster string) {
		labels := MachineLabels(ns, machine, cluster)
		for k, v := range labels {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				t.Fatalf("MachineLabels(%q, %q, %q): %s=%q invalid: %v", ns, machine, cluster, k, v, msgs)
			}
		}
		v, err := GuestClusterValue(cluster)
		switch {
		case err == nil && v != cluster:
			t.Fatalf("cluster name %q converted to %q", cluster, v)
		case err == nil && cluster != "" && labels[LabelGuestCluster] != cluster:
			t.Fatalf("cluster label %q, want %q", labels[LabelGuestCluster], cluster)
		case err != nil && labels[LabelGuestCluster] != "":
			t.Fatalf("invalid cluster %q labelled %q", cluster, labels[LabelGuestCluster])
		}
		if got := MachineNameMachineSetValue(ns, machine); got != labels[LabelMachineSet] && got != "" {
			t.Fatalf("machine-set value %q differs from the label %q", got, labels[LabelMachineSet])
		}
	})
}

// FuzzSplitNamespacedName: references either split into a valid namespace
// and name or are rejected with the value quoted.
func FuzzSplitNamespacedName(f *testing.F) {
	for _, s := range []string{"default/vlan1", "vlan1", "a/b/c", "/", "Bad/x", "ns/" + strings.Repeat("n", 300), "ünï/x"} {
		f.Add(s, "default")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, v, defaultNS string) {
		ns, name, err := SplitNamespacedName(v, defaultNS)
		if err != nil {
			return
		}
		if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			t.Fatalf("%q accepted as %q/%q", v, ns, name)
		}
	})
}
