package machine

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// TestWaitGoesOnFromTheCheckRead: the pre-create check's read of the VMI
// (ReadVMIForWait: none there) is the watch the create's wait goes on
// from: the VMI made after the read reaches the wait with no other watch
// of VMIs.
func TestWaitGoesOnFromTheCheckRead(t *testing.T) {
	virt := virtfake.NewSimpleClientset()
	api := harvesterapi.FromClients(restapifake.Clients{Kube: kubefake.NewSimpleClientset(), Virt: virt}, nil, nil, harvesterapi.Options{CallTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if vmi, err := api.ReadVMIForWait(ctx, "default", "m1"); vmi != nil || err != nil {
		t.Fatalf("read: %v, %v; want none", vmi, err)
	}
	vmiWatches := func() int {
		n := 0
		for _, a := range virt.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == "virtualmachineinstances" {
				n++
			}
		}
		return n
	}
	before := vmiWatches()
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "default", ResourceVersion: "7"},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running}}
	if _, err := virt.KubevirtV1().VirtualMachineInstances("default").Create(ctx, vmi, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := &Machine{Config: config.Config{VMNamespace: "default", WaitTimeoutSeconds: 5}, Name: "m1"}
	running := func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v != nil && v.Status.Phase == kubevirtv1.Running
	}
	got, err := m.WaitVMI(ctx, api, "5", "to run", running)
	if err != nil || got.Name != "m1" {
		t.Fatalf("wait: %v, %v", got, err)
	}
	if n := vmiWatches() - before; n != 0 {
		t.Errorf("the wait made %d watches of VMIs, want none (it goes on from the read)", n)
	}
	if api.Seen().TakeVMIStream("default", "m1") != nil {
		t.Error("the read's watch is still held after the wait took it")
	}
}
