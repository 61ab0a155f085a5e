package driver

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

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
		vm, err := d.confirmByVM(context.Background(), d.cmd.api)
		if err != nil {
			t.Fatalf("VM UID %s: %v", c.uid, err)
		}
		if readSetting := len(f.Dyn.Actions()) > 0; readSetting != c.wantSetting {
			t.Errorf("VM UID %s: setting read %v, want %v", c.uid, readSetting, c.wantSetting)
		}
		if (vm != nil) == c.wantSetting {
			t.Errorf("VM UID %s: returned VM %v", c.uid, vm)
		}
	}
}
