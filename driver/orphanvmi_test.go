package driver

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
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
