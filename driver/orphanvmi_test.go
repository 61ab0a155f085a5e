package driver

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// controlledBy makes vmi the instance of the VM of that UID.
func controlledBy(vmi *kubevirtv1.VirtualMachineInstance, uid string) *kubevirtv1.VirtualMachineInstance {
	ctrl := true
	vmi.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vmi.Name, UID: types.UID(uid), Controller: &ctrl}}
	return vmi
}

// TestRemoveDeletesOrphanedVMI: with the VM gone, rm deletes the VM
// instance left running only when it is provably the machine's (its ID,
// and no controller but the machine's VM); any other stays.
func TestRemoveDeletesOrphanedVMI(t *testing.T) {
	cases := []struct {
		name    string
		vmi     *kubevirtv1.VirtualMachineInstance
		deleted bool
	}{
		{"orphaned, the machine's ID", fakeVMI(testMachineID, "uid-vmi"), true},
		{"still controlled by the machine's VM", controlledBy(fakeVMI(testMachineID, "uid-vmi"), "uid-1"), true},
		{"another machine's ID", fakeVMI("other", "uid-vmi"), false},
		{"no ID", fakeVMI("", "uid-vmi"), false},
		{"controlled by another VM", controlledBy(fakeVMI(testMachineID, "uid-vmi"), "uid-other"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, f := newFakeDriver(t, testCluster, []runtime.Object{fakeSecret(ownedBy(testMachineID))}, []runtime.Object{tc.vmi})
			d.VMUID = "uid-1"
			if err := d.Remove(); err != nil {
				t.Fatalf("remove: %v", err)
			}
			_, err := f.virt.KubevirtV1().VirtualMachineInstances(testNS).Get(context.Background(), testMachine, metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tc.deleted {
				t.Errorf("VMI deleted: %v, want %v (get: %v)", gone, tc.deleted, err)
			}
		})
	}
}

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
		d, _ := newFakeDriver(t, testCluster, nil, []runtime.Object{tc.vmi})
		got := errors.Join(d.checkNameFree(context.Background(), d.api, nil)...)
		for _, w := range tc.want {
			if got == nil || !strings.Contains(got.Error(), w) {
				t.Errorf("%s: got %v, want %q", tc.name, got, w)
			}
		}
	}
}
