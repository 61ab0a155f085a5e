package driver_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
	"github.com/harvester-kit/harvester-machine/sim/controllers"
	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var gvrNAD = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

const (
	dhcpNetwork = "e2e-dhcp-net"
	dhcpPool    = "e2e-dhcp-pool"
)

// managedNetwork creates a network and a managed-DHCP IPPool serving it
// (10.80.0.10-10.80.0.20, 10.80.0.12 excluded) and waits until the pool's
// controller labelled the network.
func managedNetwork(t *testing.T, ctx context.Context, dyn dynamic.Interface) {
	t.Helper()
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": dhcpNetwork, "namespace": namespace},
		"spec":     map[string]any{"config": `{"cniVersion":"0.3.1","name":"e2e-dhcp-net","type":"bridge","bridge":"mgmt-br","vlan":80,"ipam":{}}`},
	}}
	if _, err := dyn.Resource(gvrNAD).Namespace(namespace).Create(ctx, nad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pool := dhcpapi.IPPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: dhcpapi.Group + "/" + dhcpapi.Version, Kind: "IPPool"},
		ObjectMeta: metav1.ObjectMeta{Name: dhcpPool, Namespace: namespace},
		Spec: dhcpapi.IPPoolSpec{NetworkName: namespace + "/" + dhcpNetwork, IPv4Config: dhcpapi.IPv4Config{
			CIDR: "10.80.0.0/24", ServerIP: "10.80.0.2", Router: "10.80.0.1",
			Pool: dhcpapi.Pool{Start: "10.80.0.10", End: "10.80.0.20", Exclude: []string{"10.80.0.12"}}}},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(dhcpapi.GVRIPPool).Namespace(namespace).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cleanupCtx := context.WithoutCancel(ctx)
	t.Cleanup(func() {
		_ = dyn.Resource(dhcpapi.GVRIPPool).Namespace(namespace).Delete(cleanupCtx, dhcpPool, metav1.DeleteOptions{})
		_ = dyn.Resource(gvrNAD).Namespace(namespace).Delete(cleanupCtx, dhcpNetwork, metav1.DeleteOptions{})
	})
	if err := simtest.WaitObject(ctx, dyn, gvrNAD, namespace, dhcpNetwork, func(u *unstructured.Unstructured) bool {
		return u != nil && u.GetLabels()[dhcpapi.LabelIPPoolName] == dhcpPool
	}); err != nil {
		t.Fatalf("the IPPool's controller did not label the network: %v", err)
	}
}

func getDHCPPool(t *testing.T, dyn dynamic.Interface) dhcpapi.IPPool {
	t.Helper()
	u, err := dyn.Resource(dhcpapi.GVRIPPool).Namespace(namespace).Get(context.Background(), dhcpPool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var p dhcpapi.IPPool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func allocatedTo(p dhcpapi.IPPool, mac string) string {
	if p.Status.IPv4 == nil {
		return ""
	}
	for ip, m := range p.Status.IPv4.Allocated {
		if strings.EqualFold(m, mac) {
			return ip
		}
	}
	return ""
}

// TestManagedDHCP: on a network managed DHCP serves, a machine without a
// range takes and reports the address the pool allocates to its MAC; a
// machine with a range skips what the pool allocated to others or
// excluded, holds the lowest free address and asks the pool for it with
// the static-ip annotation, so the pool accounts for it; with an add-on
// that ignores the annotation the machine still gets its held address
// and the driver warns that the pool spends another one; with the pool's
// agent down a machine without a range gets no address and is rolled back.
//
// Sequential: it stops its pool's DHCP agent (fault dhcp-agent-down), kept
// with the other simulator faults.
func TestManagedDHCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dyn := dynAdmin
	managedNetwork(t, ctx, dyn)
	r := newRM(t, "e2e-dhcp")
	net := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=" + namespace + "/" + dhcpNetwork}

	// No range: the address managed DHCP allocates to the MAC.
	r.mustCreate("e2e-dhcp-pool1-a", net...)
	macA := staticip.MAC(namespace, "e2e-dhcp-pool1-a", "nic-0")
	leased := allocatedTo(getDHCPPool(t, dyn), macA)
	if leased == "" {
		t.Fatalf("the pool allocated nothing to %s: %+v", macA, getDHCPPool(t, dyn).Status)
	}
	if got := strings.TrimSpace(r.stdout("ip", "e2e-dhcp-pool1-a")); got != leased || nic0Address(t, "e2e-dhcp-pool1-a") != leased {
		t.Errorf("ip %q, VMI nic-0 %q; want the lease %s", got, nic0Address(t, "e2e-dhcp-pool1-a"), leased)
	}

	// A range over the pool: the lowest address neither allocated nor excluded.
	rng := "10.80.0.10-10.80.0.20/24"
	flags := append(slices.Clone(net), "--harvester-static-address-range="+rng, "--harvester-static-gateway=10.80.0.1")
	want := lowestFree(t, rng, getDHCPPool(t, dyn))
	r.mustCreate("e2e-dhcp-pool1-b", flags...)
	assertHeld(t, r, "e2e-dhcp-pool1-b", want)
	if vm := getVM(t, "e2e-dhcp-pool1-b"); vm.Annotations[dhcpapi.AnnotationStaticIPPrefix+"nic-0"] != want {
		t.Errorf("VM annotations %v lack %s%s=%s", vm.Annotations, dhcpapi.AnnotationStaticIPPrefix, "nic-0", want)
	}
	if got := allocatedTo(getDHCPPool(t, dyn), staticip.MAC(namespace, "e2e-dhcp-pool1-b", "nic-0")); got != want {
		t.Errorf("the pool allocated %q to the machine's MAC, want the held %s", got, want)
	}

	// An add-on that ignores the annotation: the held address still, and a warning.
	if _, err := dyn.Resource(dhcpapi.GVRIPPool).Namespace(namespace).Patch(ctx, dhcpPool, "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+controllers.AnnStaticIPSupport+`":"unsupported"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want = lowestFree(t, rng, getDHCPPool(t, dyn))
	out := r.mustCreate("e2e-dhcp-pool1-c", flags...)
	assertHeld(t, r, "e2e-dhcp-pool1-c", want)
	if !strings.Contains(out, "the add-on ignores the static-ip.harvesterhci.io annotation") {
		t.Errorf("no warning that the pool spends another address:\n%s", out)
	}

	// The pool's agent down: no lease, the create fails and is rolled back.
	if err := sim.Fault(ctx, fault.DHCPAgentDown, namespace+"/"+dhcpPool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Fault(context.Background(), fault.DHCPAgentDown, "--remove", namespace+"/"+dhcpPool) })
	if out, err := r.create("e2e-dhcp-pool1-d", append(net, "--harvester-wait-timeout=8")...); err == nil || !strings.Contains(out, "timed out") {
		t.Errorf("a machine without a lease: err %v\n%s", err, out)
	}
	r.mustRun("rm", "-y", "e2e-dhcp-pool1-d")
	for _, name := range []string{"e2e-dhcp-pool1-a", "e2e-dhcp-pool1-b", "e2e-dhcp-pool1-c"} {
		r.mustRun("rm", "-y", "--update-config", name)
	}
	// Garbage collection releases the pool's allocations with the VMs.
	if err := simtest.WaitObject(ctx, dyn, dhcpapi.GVRIPPool, namespace, dhcpPool, func(u *unstructured.Unstructured) bool {
		used, _, _ := unstructured.NestedInt64(u.Object, "status", "ipv4", "used")
		return used == 0
	}); err != nil {
		t.Errorf("the pool's allocations were not released: %v; status %+v", err, getDHCPPool(t, dyn).Status)
	}
}

// lowestFree is the lowest address of rng the pool has not allocated or excluded.
func lowestFree(t *testing.T, rng string, p dhcpapi.IPPool) string {
	t.Helper()
	r, err := staticip.ParseRange(rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Addresses() {
		if p.Status.IPv4 == nil || p.Status.IPv4.Allocated[a.String()] == "" {
			return a.String()
		}
	}
	t.Fatalf("no free address in %s: %v", rng, p.Status.IPv4)
	return ""
}

// assertHeld checks the machine's claim, its VMI's nic-0 and
// rancher-machine's ip against addr.
func assertHeld(t *testing.T, r *rm, name, addr string) {
	t.Helper()
	list, err := kube.CoreV1().ConfigMaps(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: staticip.LabelMachine + "=" + name})
	if err != nil || len(list.Items) != 1 || list.Items[0].Data[staticip.KeyAddress] != netip.MustParsePrefix(addr+"/24").String() {
		t.Errorf("%s's claims: %v %v, want one of %s", name, list, err, addr)
	}
	if got := nic0Address(t, name); got != addr {
		t.Errorf("%s's VMI reports %q on nic-0, want %s", name, got, addr)
	}
	if got := strings.TrimSpace(r.stdout("ip", name)); got != addr {
		t.Errorf("rancher-machine ip %s = %q, want %s", name, got, addr)
	}
}
