package driver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestRemovalWithVM: only a VM of the machine, not being deleted by
// someone else, whose Secret the machine made it own and whose volumes
// all carry the machine's label, takes everything with it.
func TestRemovalWithVM(t *testing.T) {
	vm := fakeVM(testMachineID, "uid-1")
	deleting := fakeVM(testMachineID, "uid-1")
	deleting.DeletionTimestamp = &metav1.Time{}
	disk := testMachine + "-disk-0"
	cases := []struct {
		name string
		r    removal
		want bool
	}{
		{"own VM, owned Secret, labelled disk", removal{vm: vm, secretWithVM: true, claims: map[string]types.UID{disk: "u"}, labelled: map[string]bool{disk: true}}, true},
		{"no VM", removal{secretWithVM: true}, false},
		{"VM being deleted by someone else", removal{vm: deleting, secretWithVM: true}, false},
		{"Secret not known to be the VM's", removal{vm: vm, claims: map[string]types.UID{}}, false},
		{"a volume found only through the VM", removal{vm: vm, secretWithVM: true, claims: map[string]types.UID{disk: "u"}, labelled: map[string]bool{}}, false},
	}
	for _, c := range cases {
		if got := c.r.withVM(); got != c.want {
			t.Errorf("%s: withVM = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRemoveConfirmsClusterByVMUID: the VM of the recorded UID confirms
// the cluster, so the setting is not read; another UID falls back to the
// setting.
func TestRemoveConfirmsClusterByVMUID(t *testing.T) {
	for _, c := range []struct {
		uid         string
		wantSetting bool
	}{{"uid-1", false}, {"uid-other", true}} {
		d, f := newFakeDriver(t, testCluster, nil, []runtime.Object{fakeVM(testMachineID, c.uid)})
		d.VMUID = "uid-1"
		vm, err := d.confirmByVM(context.Background(), d.api)
		if err != nil {
			t.Fatalf("VM UID %s: %v", c.uid, err)
		}
		if readSetting := len(f.dyn.Actions()) > 0; readSetting != c.wantSetting {
			t.Errorf("VM UID %s: setting read %v, want %v", c.uid, readSetting, c.wantSetting)
		}
		if (vm != nil) == c.wantSetting {
			t.Errorf("VM UID %s: returned VM %v", c.uid, vm)
		}
	}
}
