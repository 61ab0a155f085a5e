package precheck

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// TestPreCreateRefusesOrphanedVMI: a VM instance holding the machine's
// name is a pre-create problem that says whose it is.
func TestPreCreateRefusesOrphanedVMI(t *testing.T) {
	cases := []struct {
		name string
		vmi  *kubevirtv1.VirtualMachineInstance
		want []string
	}{
		{"orphaned machine's", fakeVMI("abc", "u"), []string{
			"a VM instance (VMI) " + testNS + "/" + testMachine + " already exists and holds the machine's name",
			"it belongs to no VM (a VM deleted with --cascade=orphan leaves its instance running)",
			"made by the machine with " + harvester.LabelMachineID + "=abc of guest cluster c1",
			"kubectl delete vmi -n " + testNS + " " + testMachine}},
		{"another VM's", controlledBy(&kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: testNS}}, "uid-x"), []string{
			"it is the instance of VirtualMachine " + testMachine + " (UID uid-x)", "it carries none of the driver's labels"}},
	}
	for _, tc := range cases {
		api, _, m := newFake(t, nil, []runtime.Object{tc.vmi})
		got := errors.Join(NamesFree(context.Background(), api, m, nil)...)
		for _, w := range tc.want {
			if got == nil || !strings.Contains(got.Error(), w) {
				t.Errorf("%s: got %v, want %q", tc.name, got, w)
			}
		}
	}
}

// TestPreCreateRefusesLeftovers: a disk of an earlier machine of the name
// makes the name unusable, and the problem says which; the VM and Secret
// names are not read (Create's own creates find them taken), the VM
// instance's is (see TestPreCreateRefusesOrphanedVMI).
func TestPreCreateRefusesLeftovers(t *testing.T) {
	api, f, m := newFake(t, []runtime.Object{fakePVC(testMachine+"-disk-0", nil), fakeSecret(nil)}, nil)
	claims := []string{testMachine + "-disk-0", testMachine + "-disk-1"}
	problems := NamesFree(context.Background(), api, m, claims)
	got := errors.Join(problems...)
	if len(problems) != 1 || !strings.Contains(got.Error(), "volume (PVC) named "+testMachine+"-disk-0 already exists") {
		t.Errorf("got %v", got)
	}
	for _, a := range append(f.Kube.Actions(), f.Virt.Actions()...) {
		if r := a.GetResource().Resource; r != "persistentvolumeclaims" && r != "virtualmachineinstances" {
			t.Errorf("read %s %s", a.GetVerb(), r)
		}
	}
}
