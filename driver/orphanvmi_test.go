package driver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// harvesterMACFinalizer is Harvester v1.8.0's VMI finalizer as its source
// makes it (wrangler's prefix and the handler name in
// pkg/controller/master/virtualmachine/register.go).
const harvesterMACFinalizer = "wrangler.cattle.io/VMController.BackfillObservedNetworkMacAddress"

// controlledBy makes vmi the instance of the VM of that UID.
func controlledBy(vmi *kubevirtv1.VirtualMachineInstance, uid string) *kubevirtv1.VirtualMachineInstance {
	ctrl := true
	vmi.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vmi.Name, UID: types.UID(uid), Controller: &ctrl}}
	return vmi
}

// TestRemoveDeletesOrphanedVMI: with the VM gone, rm deletes the VM
// instance left running only when it is provably the machine's (its ID,
// and no controller but the machine's VM), and releases Harvester's
// finalizer only from it; any other stays as it is.
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
			tc.vmi.Finalizers = []string{harvesterMACFinalizer}
			d, f := newFakeDriver(t, testCluster, []runtime.Object{fakeSecret(ownedBy(testMachineID))}, []runtime.Object{tc.vmi})
			d.VMUID = "uid-1"
			patches := 0
			f.Virt.PrependReactor("patch", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
				patches++
				return false, nil, nil
			})
			if err := d.Remove(); err != nil {
				t.Fatalf("remove: %v", err)
			}
			got, err := f.Virt.KubevirtV1().VirtualMachineInstances(testNS).Get(context.Background(), testMachine, metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tc.deleted {
				t.Errorf("VMI deleted: %v, want %v (get: %v)", gone, tc.deleted, err)
			}
			if !tc.deleted && (patches != 0 || len(got.Finalizers) != 1) {
				t.Errorf("a VM instance not the machine's: %d patches, finalizers %v; want it untouched", patches, got.Finalizers)
			}
		})
	}
}

// TestRemoveOrphanedVMIFinalizerRefused: Harvester's finalizer holds the
// deleted orphaned VM instance (its handler needs the VM, which is gone)
// and the credential may not patch VM instances (one made before it was
// granted): rm fails at once, naming the instance, the finalizer, why and
// the kubectl command that releases it, instead of waiting out its timeout.
func TestRemoveOrphanedVMIFinalizerRefused(t *testing.T) {
	vmi := fakeVMI(testMachineID, "uid-vmi")
	vmi.Finalizers = []string{"kubevirt.io/virtualMachineControllerFinalize", harvesterMACFinalizer}
	d, f := newFakeDriver(t, testCluster, []runtime.Object{fakeSecret(ownedBy(testMachineID))}, []runtime.Object{vmi})
	d.VMUID = "uid-1"
	d.WaitTimeoutSeconds = 60
	gvr := kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstances")
	// The API server's delete of an object with finalizers: it stays,
	// marked for deletion.
	f.Virt.PrependReactor("delete", "virtualmachineinstances", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := f.Virt.Tracker().Get(gvr, testNS, a.(k8stesting.DeleteAction).GetName())
		if err != nil {
			return true, nil, err
		}
		v := obj.(*kubevirtv1.VirtualMachineInstance).DeepCopy()
		v.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		return true, nil, f.Virt.Tracker().Update(gvr, v, testNS)
	})
	f.Virt.PrependReactor("patch", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(gvr.GroupResource(), testMachine, errors.New(`User "system:serviceaccount:default:driver" cannot patch resource "virtualmachineinstances" in API group "kubevirt.io" in the namespace "default"`))
	})
	start := time.Now()
	err := d.Remove()
	if err == nil {
		t.Fatal("rm succeeded with the VM instance held")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("rm took %s to fail: it waited instead of saying so", took)
	}
	for _, want := range []string{
		"VM instance " + testNS + "/" + testMachine + " (UID uid-vmi) is held by Harvester's finalizer " + harvesterMACFinalizer,
		"which was deleted, so Harvester never releases it",
		`cannot patch resource "virtualmachineinstances"`,
		"kubectl -n " + testNS + " patch vmi " + testMachine + ` --type=json -p '[{"op":"test","path":"/metadata/uid","value":"uid-vmi"},{"op":"test","path":"/metadata/finalizers/1","value":"` + harvesterMACFinalizer + `"},{"op":"remove","path":"/metadata/finalizers/1"}]'`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("rm's error lacks %q:\n%v", want, err)
		}
	}
	got, gerr := f.Virt.KubevirtV1().VirtualMachineInstances(testNS).Get(context.Background(), testMachine, metav1.GetOptions{})
	if gerr != nil || len(got.Finalizers) != 2 || got.DeletionTimestamp == nil {
		t.Errorf("the VM instance after rm: %v, %v; want it deleted, both finalizers still on it", got, gerr)
	}
}
