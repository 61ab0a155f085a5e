package driver_test

import (
	"testing"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// TestGetIPPrefersTheVMsNICs: when the guest agent reports docker0, cni0
// and flannel.1 before the VM's NICs (fault guest-bridges), create waits
// for and `ip` prints the address of the VM's first NIC, never a bridge's.
func TestGetIPPrefersTheVMsNICs(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-bridges")
	name := "e2e-bridges-pool1-b0000"
	simFault(t, fault.GuestBridges, namespace+"/"+name)
	t.Cleanup(func() { simFault(t, fault.GuestBridges, "--remove", namespace+"/"+name) })
	r.mustCreate(name, imageAndNet...)

	vmi := getVMI(t, name)
	if vmi == nil || len(vmi.Status.Interfaces) < 4 || vmi.Status.Interfaces[0].InterfaceName != "docker0" {
		t.Fatalf("the fault did not put the bridges first: %+v", vmi)
	}
	var nic string
	for _, i := range vmi.Status.Interfaces {
		if i.Name == "nic-0" {
			nic = i.IP
		}
	}
	if ip := r.stdout("ip", name); ip != nic || nic == "" {
		t.Errorf("ip printed %q, want nic-0's address %q (interfaces %+v)", ip, nic, vmi.Status.Interfaces)
	}
	r.mustRun("rm", "-y", "--update-config", name)
}
