package removal

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

const testMachine = "c1-pool1-abcde"

// machineVM is a VM of the machine (what withVM reads of it: that it is
// there, whether it is being deleted, and whether Harvester's VM
// controller put its OnRemove finalizer on it: wrangler's prefix and the
// handler name VMController.CleanupPVCAndSnapshot of Harvester v1.8.0's
// pkg/controller/master/virtualmachine/register.go).
func machineVM() *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: "default", UID: "uid-1",
		Finalizers: []string{"kubevirt.io/virtualMachineControllerFinalize", "wrangler.cattle.io/VMController.CleanupPVCAndSnapshot"}}}
}

// TestRemovalWithVM: only a VM of the machine, not being deleted by
// someone else, whose Secret the machine made it own and whose volumes
// all carry the machine's label, takes everything with it.
func TestRemovalWithVM(t *testing.T) {
	vm := machineVM()
	deleting := machineVM()
	deleting.DeletionTimestamp = &metav1.Time{}
	unseen := machineVM()
	unseen.Finalizers = unseen.Finalizers[:1]
	disk := testMachine + "-disk-0"
	cases := []struct {
		name string
		r    Removal
		want bool
	}{
		{"own VM, owned Secret, labelled disk", Removal{VM: vm, secretWithVM: true, Claims: map[string]types.UID{disk: "u"}, labelled: map[string]bool{disk: true}}, true},
		{"no VM", Removal{secretWithVM: true}, false},
		{"VM Harvester's controllers have not seen", Removal{VM: unseen, secretWithVM: true, Claims: map[string]types.UID{disk: "u"}, labelled: map[string]bool{disk: true}}, false},
		{"VM being deleted by someone else", Removal{VM: deleting, secretWithVM: true}, false},
		{"Secret not known to be the VM's", Removal{VM: vm, Claims: map[string]types.UID{}}, false},
		{"a volume found only through the VM", Removal{VM: vm, secretWithVM: true, Claims: map[string]types.UID{disk: "u"}, labelled: map[string]bool{}}, false},
	}
	for _, c := range cases {
		if got := c.r.withVM(); got != c.want {
			t.Errorf("%s: withVM = %v, want %v", c.name, got, c.want)
		}
	}
}
