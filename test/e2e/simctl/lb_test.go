package simctl

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	gvrLB   = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "loadbalancers"}
	gvrPool = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "ippools"}
)

// createPool creates a cluster-scoped IPPool, deleted after the test.
func createPool(t *testing.T, name string, sel lbapi.Selector, ranges ...lbapi.Range) {
	t.Helper()
	createObject(t, gvrPool, &lbapi.IPPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: lbapi.Group + "/" + lbapi.Version, Kind: "IPPool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       lbapi.IPPoolSpec{Ranges: ranges, Selector: sel},
	})
	t.Cleanup(func() { _ = env.dyn.Resource(gvrPool).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func clusterScope(cluster string) lbapi.Selector {
	return lbapi.Selector{Scope: []lbapi.Scope{{Project: lbapi.All, Namespace: lbapi.All, GuestCluster: cluster}}}
}

func createLB(t *testing.T, ns, name string, ann map[string]string, spec lbapi.LoadBalancerSpec) {
	t.Helper()
	createObject(t, gvrLB, &lbapi.LoadBalancer{
		TypeMeta:   metav1.TypeMeta{APIVersion: lbapi.Group + "/" + lbapi.Version, Kind: "LoadBalancer"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec:       spec,
	})
}

func waitLB(t *testing.T, ns, name, what string, cond func(*lbapi.LoadBalancer) bool) *lbapi.LoadBalancer {
	t.Helper()
	return waitFor(t, gvrLB, ns, name, what, cond)
}

func waitPool(t *testing.T, name, what string, cond func(*lbapi.IPPool) bool) *lbapi.IPPool {
	t.Helper()
	return waitFor(t, gvrPool, "", name, what, cond)
}

func readyCond(l *lbapi.LoadBalancer) *lbapi.Condition {
	for i := range l.Status.Conditions {
		if l.Status.Conditions[i].Type == lbapi.ConditionReady {
			return &l.Status.Conditions[i]
		}
	}
	return nil
}

func lbReady(l *lbapi.LoadBalancer) bool {
	c := readyCond(l)
	return l != nil && c != nil && c.Status == "True"
}

func lbNotReadyWith(msg string) func(*lbapi.LoadBalancer) bool {
	return func(l *lbapi.LoadBalancer) bool {
		c := readyCond(l)
		return l != nil && c != nil && c.Status == "False" && c.Message == msg
	}
}

func clusterLB(cluster string) (map[string]string, lbapi.LoadBalancerSpec) {
	return map[string]string{lbapi.AnnCluster: cluster}, lbapi.LoadBalancerSpec{WorkloadType: lbapi.WorkloadCluster, IPAM: lbapi.IPAMPool}
}

// simFault runs `harvester-sim fault ARGS...` against the test simulator.
func simFault(t *testing.T, args ...string) {
	t.Helper()
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(testContext(t), bin, append([]string{"fault", "--state-dir", env.sim.Dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("harvester-sim fault %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestLoadBalancerGetsAddressFromItsClustersPool(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createPool(t, "t-scope-a", clusterScope("scope-a"), lbapi.Range{Subnet: "10.201.1.0/24", RangeStart: "10.201.1.10", RangeEnd: "10.201.1.20"})
	createPool(t, "t-scope-b", clusterScope("scope-b"), lbapi.Range{Subnet: "10.201.2.0/24"})
	ann, spec := clusterLB("scope-a")
	createLB(t, ns, "web", ann, spec)

	l := waitLB(t, ns, "web", "Ready", lbReady)
	want := lbapi.AllocatedAddress{IPPool: "t-scope-a", IP: "10.201.1.10", Mask: "255.255.255.0", Gateway: "10.201.1.1"}
	if l.Status.AllocatedAddress != want {
		t.Fatalf("allocatedAddress = %+v, want %+v", l.Status.AllocatedAddress, want)
	}
	if !slices.Contains(l.Finalizers, lbapi.Finalizer) {
		t.Fatalf("finalizers = %v, want %s", l.Finalizers, lbapi.Finalizer)
	}
	if l.Status.Address != "" {
		t.Fatalf("workloadType cluster: status.address %q is the cloud provider's to write", l.Status.Address)
	}
	owner := ns + "/web"
	p := waitPool(t, "t-scope-a", "allocation recorded", func(p *lbapi.IPPool) bool {
		return p != nil && p.Status.Allocated["10.201.1.10"] == owner
	})
	if p.Status.Total != 11 || p.Status.Available != 10 || p.Status.LastAllocated != "10.201.1.10" {
		t.Fatalf("pool status = %+v, want total 11, available 10, lastAllocated 10.201.1.10", p.Status)
	}
	if b := waitPool(t, "t-scope-b", "counted", func(p *lbapi.IPPool) bool { return p != nil && p.Status.Total > 0 }); len(b.Status.Allocated) != 0 {
		t.Fatalf("the other cluster's pool handed out an address: %+v", b.Status)
	}

	deleteObject(t, gvrLB, ns, "web")
	waitLB(t, ns, "web", "deleted", func(l *lbapi.LoadBalancer) bool { return l == nil })
	p = waitPool(t, "t-scope-a", "address released", func(p *lbapi.IPPool) bool { return p != nil && len(p.Status.Allocated) == 0 })
	if p.Status.AllocatedHistory["10.201.1.10"] != owner || p.Status.Available != 11 {
		t.Fatalf("released pool status = %+v, want the address in allocatedHistory and 11 available", p.Status)
	}

	// Another load balancer takes the next address (round robin); the
	// first one, created again, gets its earlier address back.
	createLB(t, ns, "other", ann, spec)
	if got := waitLB(t, ns, "other", "Ready", lbReady).Status.AllocatedAddress.IP; got != "10.201.1.11" {
		t.Fatalf("next load balancer got %s, want 10.201.1.11 (round robin after lastAllocated)", got)
	}
	createLB(t, ns, "web", ann, spec)
	if got := waitLB(t, ns, "web", "Ready", lbReady).Status.AllocatedAddress.IP; got != "10.201.1.10" {
		t.Fatalf("re-created load balancer got %s, want its earlier 10.201.1.10 from allocatedHistory", got)
	}

	// Switching to DHCP gives the pool's address back.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := env.dyn.Resource(gvrLB).Namespace(ns).Get(testContext(t), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		_ = unstructured.SetNestedField(u.Object, lbapi.IPAMDHCP, "spec", "ipam")
		_, err = env.dyn.Resource(gvrLB).Namespace(ns).Update(testContext(t), u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitLB(t, ns, "web", "DHCP address", func(l *lbapi.LoadBalancer) bool { return l != nil && l.Status.AllocatedAddress.IP == lbapi.DHCPAddress })
	waitPool(t, "t-scope-a", "the pool address released", func(p *lbapi.IPPool) bool {
		return p != nil && p.Status.Allocated["10.201.1.10"] == "" && p.Status.AllocatedHistory["10.201.1.10"] == owner
	})
}

func TestLoadBalancerPriorityAndNetwork(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	low := lbapi.Selector{Priority: 1, Network: "default/vlan-prio", Scope: []lbapi.Scope{{Project: lbapi.All, Namespace: ns, GuestCluster: lbapi.All}}}
	high := low
	high.Priority = 5
	createPool(t, "t-prio-low", low, lbapi.Range{Subnet: "10.202.1.0/24"})
	createPool(t, "t-prio-high", high, lbapi.Range{Subnet: "10.202.2.0/24"})
	createLB(t, ns, "prio", map[string]string{lbapi.AnnNetwork: "default/vlan-prio"}, lbapi.LoadBalancerSpec{WorkloadType: lbapi.WorkloadCluster, IPAM: lbapi.IPAMPool})
	if got := waitLB(t, ns, "prio", "Ready", lbReady).Status.AllocatedAddress.IPPool; got != "t-prio-high" {
		t.Fatalf("pool = %s, want the higher priority t-prio-high", got)
	}
	createLB(t, ns, "named", nil, lbapi.LoadBalancerSpec{WorkloadType: lbapi.WorkloadCluster, IPAM: lbapi.IPAMPool, IPPool: "t-prio-low"})
	if got := waitLB(t, ns, "named", "Ready", lbReady).Status.AllocatedAddress; got.IPPool != "t-prio-low" || got.IP != "10.202.1.2" {
		t.Fatalf("named pool: allocatedAddress = %+v, want 10.202.1.2 of t-prio-low", got)
	}
	createLB(t, ns, "missing", nil, lbapi.LoadBalancerSpec{WorkloadType: lbapi.WorkloadCluster, IPAM: lbapi.IPAMPool, IPPool: "t-no-such-pool"})
	waitLB(t, ns, "missing", "Ready False", lbNotReadyWith("fail to get allocator t-no-such-pool"))
	createLB(t, ns, "dhcp", nil, lbapi.LoadBalancerSpec{WorkloadType: lbapi.WorkloadCluster, IPAM: lbapi.IPAMDHCP})
	if got := waitLB(t, ns, "dhcp", "Ready", lbReady).Status.AllocatedAddress.IP; got != lbapi.DHCPAddress {
		t.Fatalf("ipam dhcp: ip = %q, want %s", got, lbapi.DHCPAddress)
	}
}

// TestLoadBalancerGlobalPool is not parallel: the global pool serves every
// load balancer no other pool matches.
func TestLoadBalancerGlobalPool(t *testing.T) {
	ns := testNamespace(t)
	ann, spec := clusterLB("cluster-without-pool")
	createLB(t, ns, "lonely", ann, spec)
	// Harvester's selectIPPool formats its *ipam.Requirement with %+v
	// (load-balancer-harvester v1.8.1, pkg/controller/loadbalancer/controller.go).
	waitLB(t, ns, "lonely", "Ready False", lbNotReadyWith(
		"no matched IPPool with requirement &{Network: Project: Namespace:"+ns+" Cluster:cluster-without-pool}"))
	createPool(t, "t-global", lbapi.Selector{Scope: []lbapi.Scope{{Project: lbapi.All, Namespace: lbapi.All, GuestCluster: lbapi.All}}}, lbapi.Range{Subnet: "10.203.0.0/24"})
	if got := waitLB(t, ns, "lonely", "Ready", lbReady).Status.AllocatedAddress.IPPool; got != "t-global" {
		t.Fatalf("pool = %s, want the global pool", got)
	}
	if p := waitPool(t, "t-global", "labelled global", func(p *lbapi.IPPool) bool { return p != nil && p.Labels[lbapi.LabelGlobalPool] == "true" }); p == nil {
		t.Fatal("global pool vanished")
	}
	deleteObject(t, gvrLB, ns, "lonely")
	waitLB(t, ns, "lonely", "deleted", func(l *lbapi.LoadBalancer) bool { return l == nil })
}

func TestLoadBalancerExhaustedPool(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createPool(t, "t-tiny", clusterScope("tiny"), lbapi.Range{Subnet: "10.204.0.5/32"})
	ann, spec := clusterLB("tiny")
	createLB(t, ns, "first", ann, spec)
	if got := waitLB(t, ns, "first", "Ready", lbReady).Status.AllocatedAddress; got.IP != "10.204.0.5" || got.Gateway != "" {
		t.Fatalf("/32 pool: allocatedAddress = %+v, want 10.204.0.5 without gateway", got)
	}
	createLB(t, ns, "second", ann, spec)
	waitLB(t, ns, "second", "Ready False", lbNotReadyWith("no IP addresses available in range set: 10.204.0.5-10.204.0.5"))
	deleteObject(t, gvrLB, ns, "first")
	if got := waitLB(t, ns, "second", "Ready once freed", lbReady).Status.AllocatedAddress.IP; got != "10.204.0.5" {
		t.Fatalf("second got %s, want the freed 10.204.0.5", got)
	}
}

func TestLoadBalancerFaults(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createPool(t, "t-fault-pool", clusterScope("faulty"), lbapi.Range{Subnet: "10.205.0.0/24"})
	waitPool(t, "t-fault-pool", "counted", func(p *lbapi.IPPool) bool { return p != nil && p.Status.Total == 253 })

	simFault(t, "exhaust-pool", "t-fault-*")
	u, err := env.dyn.Resource(gvrPool).Get(testContext(t), "t-fault-pool", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if avail, _, _ := unstructured.NestedInt64(u.Object, "status", "available"); avail != 0 {
		t.Fatalf("exhaust-pool returned before the pool shows it: available %d", avail)
	}
	ann, spec := clusterLB("faulty")
	createLB(t, ns, "starved", ann, spec)
	waitLB(t, ns, "starved", "Ready False", lbNotReadyWith("no IP addresses available in range set: 10.205.0.1-10.205.0.254"))
	simFault(t, "exhaust-pool", "--remove", "t-fault-*")
	waitLB(t, ns, "starved", "Ready", lbReady)

	simFault(t, "delay-allocation", "--delay", "2s", ns+"/slow-*")
	t.Cleanup(func() { simFault(t, "delay-allocation", "--remove", ns+"/slow-*") })
	createLB(t, ns, "slow-1", ann, spec)
	l := waitLB(t, ns, "slow-1", "Ready", lbReady)
	ready := readyCond(l).LastTransitionTime
	at, err := time.Parse(time.RFC3339, ready)
	if err != nil {
		t.Fatal(err)
	}
	if d := at.Sub(l.CreationTimestamp.Time); d < time.Second {
		t.Fatalf("delayed load balancer was Ready %s after creation, want about 2s", d)
	}
}

func TestLoadBalancerVMWorkload(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createPool(t, "t-vmlb", lbapi.Selector{Scope: []lbapi.Scope{{Project: lbapi.All, Namespace: ns, GuestCluster: lbapi.All}}}, lbapi.Range{Subnet: "10.206.0.0/24"})
	createLB(t, ns, "vmlb", nil, lbapi.LoadBalancerSpec{
		IPAM: lbapi.IPAMPool, BackendServerSelector: map[string][]string{"app": {"web"}},
		Listeners: []lbapi.Listener{{Name: "http", Port: 80, Protocol: "TCP", BackendPort: 8080}},
	})
	l := waitLB(t, ns, "vmlb", "no backends", lbNotReadyWith("no running backend servers"))
	if l.Status.AllocatedAddress.IP == "" {
		t.Fatalf("vm load balancer without backends has no address: %+v", l.Status)
	}
	createVM(t, ns, "web-1", vmOpts{labels: map[string]string{"app": "web"}, userData: agentCloudConfig})
	vmi := waitVMI(t, ns, "web-1", "an IP", hasIP)
	l = waitLB(t, ns, "vmlb", "Ready with backend", lbReady)
	if len(l.Status.BackendServers) != 1 || l.Status.BackendServers[0] != vmi.Status.Interfaces[0].IP {
		t.Fatalf("backendServers = %v, want [%s]", l.Status.BackendServers, vmi.Status.Interfaces[0].IP)
	}
	if l.Status.Address != l.Status.AllocatedAddress.IP {
		t.Fatalf("status.address = %q, want the allocated %s", l.Status.Address, l.Status.AllocatedAddress.IP)
	}
	patchVM(t, ns, "web-1", map[string]any{"spec": map[string]any{"runStrategy": string(kubevirtv1.RunStrategyHalted)}})
	waitLB(t, ns, "vmlb", "backend gone", lbNotReadyWith("no running backend servers"))
}

func TestLoadBalancerSchema(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	ctx := testContext(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lbapi.Group + "/" + lbapi.Version, "kind": "LoadBalancer",
		"metadata": map[string]any{"name": "schema", "namespace": ns},
		"spec":     map[string]any{"ipam": "dhcp", "workloadType": "cluster", "notAField": "x"},
	}}
	got, err := env.dyn.Resource(gvrLB).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedString(got.Object, "spec", "notAField"); found {
		t.Fatal("an unknown spec field was kept: Harvester's schema prunes it")
	}
	bad := u.DeepCopy()
	bad.SetName("bad-ipam")
	_ = unstructured.SetNestedField(bad.Object, "static", "spec", "ipam")
	if _, err := env.dyn.Resource(gvrLB).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("ipam static: err = %v, want Invalid (pool or dhcp)", err)
	}
	_ = unstructured.SetNestedField(got.Object, "1.2.3.4", "status", "address")
	if _, err := env.dyn.Resource(gvrLB).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("UpdateStatus: err = %v, want NotFound: LoadBalancer has no status subresource", err)
	}
}

func TestIPPoolInUseCannotBeDeleted(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createPool(t, "t-in-use", clusterScope("in-use"), lbapi.Range{Subnet: "10.207.0.0/24"})
	ann, spec := clusterLB("in-use")
	createLB(t, ns, "holder", ann, spec)
	waitLB(t, ns, "holder", "Ready", lbReady)
	waitPool(t, "t-in-use", "allocation recorded", func(p *lbapi.IPPool) bool { return p != nil && len(p.Status.Allocated) == 1 })
	// The refusal of load-balancer-harvester v1.8.1's IP pool validator
	// (pkg/webhook/ippool/validator.go, Delete).
	err := env.dyn.Resource(gvrPool).Delete(testContext(t), "t-in-use", metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "can't delete pool before releasing all the allocated IP") {
		t.Fatalf("delete of a pool in use: err = %v, want it refused", err)
	}
	deleteObject(t, gvrLB, ns, "holder")
	waitPool(t, "t-in-use", "released", func(p *lbapi.IPPool) bool { return p != nil && len(p.Status.Allocated) == 0 })
	if err := env.dyn.Resource(gvrPool).Delete(testContext(t), "t-in-use", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete of a pool no longer in use: %v", err)
	}
}
