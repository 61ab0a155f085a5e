package staticaddr

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// TestAddressHeldUntilVMIGone (issue 34): a machine removed while its host
// is down loses its VM, so the garbage collector deletes its address
// claim, but its VM instance stays, terminating, until Harvester
// force-resets the host; the guest may still have the address. The
// address stays taken while that VMI reports it (found by the range
// label the VMI carries from the VM template), and is free once the VMI
// is gone.
func TestAddressHeldUntilVMIGone(t *testing.T) {
	rng, err := staticip.ParseRange("10.0.0.10-10.0.0.11/24")
	if err != nil {
		t.Fatal(err)
	}
	network := config.ObjectRef{Namespace: "default", Name: "vlan1"}
	plan := &Plan{StaticAddressing: config.StaticAddressing{Range: rng, NIC: 0}, Network: network}
	old := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: "c1-pool1-old", Namespace: "default", UID: "vmi-old",
		Labels:            map[string]string{staticip.LabelRange: staticip.RangeValue(network.String(), rng.String()), harvester.LabelMachineID: "m-old"},
		DeletionTimestamp: &metav1.Time{Time: time.Unix(1000, 0)}, Finalizers: []string{"kubevirt.io/foregroundDeleteVirtualMachine"},
	}}
	old.Spec.Networks = []kubevirtv1.Network{{Name: "nic-0", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: network.String()}}}}
	old.Status.Phase = kubevirtv1.Running
	old.Status.NodeName = "harvester-node-2"
	old.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "nic-0", IP: "10.0.0.10", IPs: []string{"10.0.0.10"}}}

	claimer := func(vmis ...runtime.Object) (*machine.Machine, *harvesterapi.API) {
		api := harvesterapi.FromClients(restapifake.Clients{Kube: kubefake.NewSimpleClientset(), Virt: virtfake.NewSimpleClientset(vmis...)}, nil, nil,
			harvesterapi.Options{CallTimeout: time.Second})
		return &machine.Machine{Config: config.Config{VMNamespace: "default"}, Name: "c1-pool1-new"}, api
	}
	ctx := context.Background()

	c, api := claimer(old)
	free, err := FreeAddresses(ctx, api, c, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(free) != 1 || free[0] != netip.MustParseAddr("10.0.0.11") {
		t.Errorf("with the old VMI terminating (its claim gone): free %v, want only 10.0.0.11", free)
	}
	// Both taken: the error names the terminating VM as the holder.
	other := old.DeepCopy()
	other.Name, other.UID = "c1-pool1-other", "vmi-other"
	other.Status.Interfaces[0].IP, other.Status.Interfaces[0].IPs = "10.0.0.11", []string{"10.0.0.11"}
	c, api = claimer(old, other)
	if _, err := FreeAddresses(ctx, api, c, plan); err == nil || !strings.Contains(err.Error(), "10.0.0.10 in use by VM c1-pool1-old") {
		t.Errorf("range full: %v, want the old VM named as holding 10.0.0.10", err)
	}

	c, api = claimer()
	free, err = FreeAddresses(ctx, api, c, plan)
	if err != nil || len(free) != 2 || free[0] != netip.MustParseAddr("10.0.0.10") {
		t.Errorf("old VMI gone: free %v (%v), want 10.0.0.10 first again", free, err)
	}
}
