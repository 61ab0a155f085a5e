package driver

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

func newStaticCreateDriver(t *testing.T, rng string) (*Driver, fakeHarvester) {
	t.Helper()
	d, f := newCreateDriver(t)
	d.StaticAddressRange = rng
	d.cmd.parsed = nil
	// The garbage collector: deleting a VM deletes the ConfigMaps it owns.
	f.Virt.PrependReactor("delete", "virtualmachines", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		list, err := f.Kube.CoreV1().ConfigMaps(testNS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return true, nil, err
		}
		for _, cm := range list.Items {
			if len(cm.OwnerReferences) > 0 && cm.OwnerReferences[0].Name == name {
				_ = f.Kube.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, testNS, cm.Name)
			}
		}
		return false, nil, nil
	})
	return d, f
}

func assertNoClaims(t *testing.T, f fakeHarvester) {
	t.Helper()
	list, err := f.Kube.CoreV1().ConfigMaps(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: staticip.LabelClaim})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("address claims left: %v %v", list, err)
	}
}

func claimOf(t *testing.T, network, addr, machine string, labelled bool) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: staticip.ClaimName(network, netip.MustParseAddr(addr)), Namespace: testNS}}
	if labelled {
		cm.Labels = map[string]string{staticip.LabelClaim: staticip.NetworkValue(network)}
		cm.Data = staticip.ClaimData(staticip.Claim{Address: netip.PrefixFrom(netip.MustParseAddr(addr), 24), Machine: machine, Network: network})
	}
	return cm
}

// TestStaticCreateFailsBeforeAnythingExists: a range whose addresses are
// all held (by claims, by a foreign object of a claim's name, by a guest
// outside any claim) fails naming the range and every holder, and no VM
// or Secret was made.
func TestStaticCreateFailsBeforeAnythingExists(t *testing.T) {
	d, f := newStaticCreateDriver(t, "10.0.0.10-10.0.0.12/24")
	for _, cm := range []*corev1.ConfigMap{claimOf(t, "default/vlan1", "10.0.0.10", "other-1", true), claimOf(t, "default/vlan1", "10.0.0.11", "", false)} {
		if err := f.Kube.Tracker().Add(cm); err != nil {
			t.Fatal(err)
		}
	}
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "guest", Namespace: testNS},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Networks: []kubevirtv1.Network{{Name: "nic-0",
			NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "default/vlan1"}}}}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "nic-0", IP: "10.0.0.12"}}},
	}
	if err := f.Virt.Tracker().Add(vmi); err != nil {
		t.Fatal(err)
	}
	err := d.Create()
	for _, want := range []string{
		`--harvester-static-address-range "10.0.0.10-10.0.0.12/24": no free address on network default/vlan1: all 3 are taken`,
		"10.0.0.10 held by machine other-1",
		"10.0.0.11 held by ConfigMap " + staticip.ClaimName("default/vlan1", netip.MustParseAddr("10.0.0.11")) + " (not a claim of this driver)",
		"10.0.0.12 in use by VM guest",
		"nothing was created",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Create() = %v; want %q", err, want)
		}
	}
	assertGone(t, f)
}

// TestStaticCreateRace: claims lost to other machines are skipped; the
// machine holds the next address, owned by its VM, and its Secret carries
// that address's network data.
func TestStaticCreateRace(t *testing.T) {
	d, f := newStaticCreateDriver(t, "10.0.0.10-10.0.0.30/24")
	lost := 0
	f.Kube.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if lost < 6 {
			lost++
			return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, "taken")
		}
		return false, nil, nil
	})
	fail(f.Virt, "patch", "virtualmachines", internal("no start"))
	var claim *corev1.ConfigMap
	f.Kube.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		claim = a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		return false, nil, nil
	})
	err := d.Create()
	if err == nil || !strings.Contains(err.Error(), "no start") || strings.Contains(err.Error(), "cleanup") {
		t.Fatalf("Create() = %v, want the start's failure, cleaned up", err)
	}
	if d.HeldAddress != "10.0.0.16" || d.HeldInterface != "nic-0" {
		t.Errorf("held %s on %s, want 10.0.0.16 (6 lost races) on nic-0", d.HeldAddress, d.HeldInterface)
	}
	if cm := claim; cm == nil || cm.Name != staticip.ClaimName("default/vlan1", netip.MustParseAddr("10.0.0.16")) ||
		len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Name != testMachine || cm.Labels[harvester.LabelMachineID] != d.MachineID {
		t.Errorf("claim not of 10.0.0.16, not owned by the VM or unlabelled: %+v", cm)
	}
	assertGone(t, f)
	assertNoClaims(t, f)
}

// TestStaticCreateRollsBack: a failure after the VM exists removes it.
func TestStaticCreateRollsBack(t *testing.T) {
	for _, tc := range []struct{ verb, resource, want string }{
		{"create", "configmaps", "create ConfigMap " + testNS + "/"},
		{"create", "secrets", "create Secret " + testNS + "/"},
	} {
		t.Run(tc.verb+" "+tc.resource, func(t *testing.T) {
			d, f := newStaticCreateDriver(t, "10.0.0.10-10.0.0.30/24")
			fail(f.Kube, tc.verb, tc.resource, internal("boom"))
			err := d.Create()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "cleanup") {
				t.Fatalf("Create() = %v, want %q without a failed cleanup", err, tc.want)
			}
			assertGone(t, f)
			assertNoClaims(t, f)
		})
	}
}

// TestStaticCreateReadsOnlyVMIsThatCanHoldTheRange: the VMIs a static
// create reads are selected by label: a VMI the driver did not make and a
// machine of the same range whose claim is gone count as holders; the
// driver's other machines (another range) are not read at all, so the
// cost of a create does not grow with them.
func TestStaticCreateReadsOnlyVMIsThatCanHoldTheRange(t *testing.T) {
	const rng = "10.0.0.10-10.0.0.12/24"
	d, f := newStaticCreateDriver(t, rng)
	reporting := func(name, addr string, labels map[string]string) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: labels},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Networks: []kubevirtv1.Network{{Name: "nic-0",
				NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "default/vlan1"}}}}},
			Status: kubevirtv1.VirtualMachineInstanceStatus{Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "nic-0", IP: addr}}},
		}
	}
	for _, vmi := range []*kubevirtv1.VirtualMachineInstance{
		reporting("other-pool", "10.0.0.10", map[string]string{harvester.LabelMachineID: "other", staticip.LabelRange: staticip.RangeValue("default/vlan1", "10.0.0.5-10.0.0.20/24")}),
		reporting("same-range", "10.0.0.11", map[string]string{harvester.LabelMachineID: "lost-claim", staticip.LabelRange: staticip.RangeValue("default/vlan1", rng)}),
		reporting("by-hand", "10.0.0.12", nil),
	} {
		if err := f.Virt.Tracker().Add(vmi); err != nil {
			t.Fatal(err)
		}
	}
	fail(f.Virt, "patch", "virtualmachines", internal("no start"))
	if err := d.Create(); err == nil || !strings.Contains(err.Error(), "no start") {
		t.Fatalf("Create() = %v, want the start's failure", err)
	}
	if d.HeldAddress != "10.0.0.10" {
		t.Errorf("held %q, want 10.0.0.10 (10.0.0.11 and .12 are reported by VMIs that can hold them)", d.HeldAddress)
	}
	for _, a := range f.Virt.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "virtualmachineinstances" && l.GetListRestrictions().Labels.Empty() && l.GetListRestrictions().Fields.Empty() {
			t.Errorf("listed every VMI of the namespace")
		}
	}
}
