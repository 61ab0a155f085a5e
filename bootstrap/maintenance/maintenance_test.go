package maintenance

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Fixtures are written out by hand with KubeVirt's and Harvester's keys,
// not with the project's constants.

func host(name, zone string, extra ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}}}
	for i := 0; i+1 < len(extra); i += 2 {
		n.Labels[extra[i]] = extra[i+1]
	}
	// A kubelet reports ephemeral storage too; a launcher pod asks 50M of it.
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("62Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

type vmOpt func(*kubevirtv1.VirtualMachineInstance)

func strategy(s kubevirtv1.EvictionStrategy) vmOpt {
	return func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.EvictionStrategy = &s }
}

func notMigratable(reason string) vmOpt {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: "LiveMigratable", Status: corev1.ConditionFalse, Reason: reason, Message: "says KubeVirt"}}
	}
}

func zonePinned(zone string) vmOpt {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
	}
}

func vgpu(v *kubevirtv1.VirtualMachineInstance) {
	v.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "gpu1", DeviceName: "nvidia.com/A100"}}
	strategy(kubevirtv1.EvictionStrategyLiveMigrateIfPossible)(v)
	notMigratable("HostDeviceNotLiveMigratable")(v)
}

// guestVMI is a running guest-cluster VMI labelled as the node driver
// labels it, LiveMigratable True unless an option says otherwise.
func guestVMI(name, node, cluster, pool string, opts ...vmOpt) kubevirtv1.VirtualMachineInstance {
	v := kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{"guestcluster.harvesterhci.io/name": cluster, "nodepool.harvesterhci.io/name": pool}}}
	v.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	v.Status.NodeName, v.Status.Phase = node, kubevirtv1.Running
	v.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: "LiveMigratable", Status: corev1.ConditionTrue}}
	strategy(kubevirtv1.EvictionStrategyLiveMigrate)(&v)
	for _, o := range opts {
		o(&v)
	}
	return v
}

// snapshot makes the VMs of the VMIs (same name and labels).
func snapshot(nodes []corev1.Node, vmis ...kubevirtv1.VirtualMachineInstance) *clusterstate.Hosts {
	h := &clusterstate.Hosts{Nodes: nodes, VMIs: vmis, Pods: []corev1.Pod{}, Errors: map[string]string{}}
	for _, v := range vmis {
		h.VMs = append(h.VMs, kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: v.Name, Labels: v.Labels}})
	}
	return h
}

func threeHosts() []corev1.Node {
	return []corev1.Node{host("h1", "zone-a"), host("h2", "zone-b"), host("h3", "zone-c")}
}

func verdict(t *testing.T, r Result, name string) VM {
	t.Helper()
	for _, v := range r.VMs {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no verdict for %s in %+v", name, r.VMs)
	return VM{}
}

func TestCheck(t *testing.T) {
	type want struct {
		action, reason string
		targets        []string
		why            string // a part of Why
	}
	cases := []struct {
		name   string
		h      *clusterstate.Hosts
		hosts  []string
		force  bool
		vm     string
		want   want
		failed bool
		losses []string // "group down/members certain"
	}{{
		// Harvester's nodedrain controller refuses maintenance without
		// force while a VMI on the host has LiveMigratable False, whatever
		// its eviction strategy.
		name: "vGPU VM blocks maintenance without force", hosts: []string{"h1"}, vm: "g-gpu-0",
		h:    snapshot(threeHosts(), guestVMI("g-gpu-0", "h1", "g", "gpu", vgpu), guestVMI("g-gpu-1", "h2", "g", "gpu", vgpu)),
		want: want{action: Blocks, reason: "HostDeviceNotLiveMigratable", why: "Harvester refuses maintenance mode without force: LiveMigratable False (HostDeviceNotLiveMigratable)"}, failed: true,
	}, {
		// With force Harvester stops it (runStrategy Halted).
		name: "vGPU VM is shut down by forced maintenance", hosts: []string{"h1"}, force: true, vm: "g-gpu-0",
		h:    snapshot(threeHosts(), guestVMI("g-gpu-0", "h1", "g", "gpu", vgpu), guestVMI("g-gpu-1", "h2", "g", "gpu", vgpu)),
		want: want{action: ShutDown, reason: "HostDeviceNotLiveMigratable", why: "forced maintenance stops it"},
		// Without roles, a pool of 2 with 1 down has no majority: a risk, not certain.
		losses: []string{"pool gpu 1/2 false"},
	}, {
		// A blocked VM keeps running: no loss.
		name: "LiveMigrate VM with a ReadWriteOnce disk blocks", hosts: []string{"h1"}, vm: "g-p-0",
		h:    snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", notMigratable("DisksNotLiveMigratable"))),
		want: want{action: Blocks, reason: "DisksNotLiveMigratable", why: "LiveMigratable False (DisksNotLiveMigratable)"}, failed: true,
	}, {
		name: "pool over three hosts, one in maintenance: migrates to the other two", hosts: []string{"h1"}, vm: "g-p-0",
		h:    snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p"), guestVMI("g-p-1", "h2", "g", "p"), guestVMI("g-p-2", "h3", "g", "p")),
		want: want{action: Migrates, targets: []string{"h2", "h3"}},
	}, {
		name: "zone-pinned pool whose zone has only that host blocks", hosts: []string{"h1"}, vm: "g-p-0",
		h:    snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", zonePinned("zone-a"))),
		want: want{action: Blocks, why: "no other Ready, schedulable host matches its node affinity and nodeSelector (NodeSchedulingRequirementsNotMet)"}, failed: true,
	}, {
		name: "zone-pinned pool with a second host in its zone migrates there", hosts: []string{"h1"}, vm: "g-p-0",
		h:    snapshot(append(threeHosts(), host("h4", "zone-a")), guestVMI("g-p-0", "h1", "g", "p", zonePinned("zone-a"))),
		want: want{action: Migrates, targets: []string{"h4"}},
	}, {
		name: "zone-pinned, forced: Harvester stops it", hosts: []string{"h1"}, force: true, vm: "g-p-0",
		h:    snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", zonePinned("zone-a"))),
		want: want{action: ShutDown, why: "forced maintenance stops it: no other Ready, schedulable host"}, failed: true,
		losses: []string{"pool p 1/1 true"},
	}, {
		name: "a NotReady host in the zone does not count for Harvester", hosts: []string{"h1"}, vm: "g-p-0",
		h: func() *clusterstate.Hosts {
			n := append(threeHosts(), host("h4", "zone-a"))
			n[3].Status.Conditions[0].Status = corev1.ConditionUnknown
			return snapshot(n, guestVMI("g-p-0", "h1", "g", "p", zonePinned("zone-a")))
		}(),
		want: want{action: Blocks, why: "NodeSchedulingRequirementsNotMet"}, failed: true,
	}, {
		name: "the other host in maintenance too is no target", hosts: []string{"h1", "h4"}, vm: "g-p-0",
		h:    snapshot(append(threeHosts(), host("h4", "zone-a")), guestVMI("g-p-0", "h1", "g", "p", zonePinned("zone-a"))),
		want: want{action: Blocks, why: "NodeSchedulingRequirementsNotMet"}, failed: true,
	}, {
		name: "a tainted host in the zone passes Harvester's check but takes no migration", hosts: []string{"h1"}, vm: "g-p-0",
		h: func() *clusterstate.Hosts {
			n := append(threeHosts(), host("h4", "zone-a"))
			n[3].Spec.Taints = []corev1.Taint{{Key: "kubevirt.io/drain", Effect: corev1.TaintEffectNoSchedule}}
			return snapshot(n, guestVMI("g-p-0", "h1", "g", "p", zonePinned("zone-a")))
		}(),
		want: want{action: Blocks, why: "h4: taint kubevirt.io/drain:NoSchedule not tolerated"}, failed: true,
	}, {
		name: "cordoned and tainted hosts are no targets", hosts: []string{"h1"}, vm: "g-p-0",
		h: func() *clusterstate.Hosts {
			n := threeHosts()
			n[1].Spec.Unschedulable = true
			n[2].Spec.Taints = []corev1.Taint{{Key: "kubevirt.io/drain", Effect: corev1.TaintEffectNoSchedule}}
			return snapshot(n, guestVMI("g-p-0", "h1", "g", "p"))
		}(),
		want: want{action: Blocks, why: "h2: cordoned; h3: taint kubevirt.io/drain:NoSchedule not tolerated"}, failed: true,
	}, {
		name: "no room: migratable but nothing fits blocks", hosts: []string{"h1"}, vm: "g-p-0",
		h: func() *clusterstate.Hosts {
			n := threeHosts()[:2]
			n[1].Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("2Gi") // less than 2Gi + KubeVirt's overhead
			return snapshot(n, guestVMI("g-p-0", "h1", "g", "p"))
		}(),
		want: want{action: Blocks, why: "h2: no room: memory"}, failed: true,
	}, {
		name: "no room for a vGPU the target does not offer", hosts: []string{"h1"}, vm: "g-p-0",
		h: snapshot(threeHosts()[:2], guestVMI("g-p-0", "h1", "g", "p", func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "d", DeviceName: "vendor.com/nic"}}
		})),
		want: want{action: Blocks, why: "h2: no room: vendor.com/nic (needs 1, 0 free)"}, failed: true,
	}, {
		name: "eviction strategy None shuts down", hosts: []string{"h1"}, vm: "g-p-0",
		h:    snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", strategy(kubevirtv1.EvictionStrategyNone)), guestVMI("g-p-1", "h2", "g", "p"), guestVMI("g-p-2", "h3", "g", "p")),
		want: want{action: ShutDown, why: "None"},
	}, {
		name: "no LiveMigratable condition: not migratable for KubeVirt", hosts: []string{"h1"}, vm: "g-p-0",
		h:    snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", func(v *kubevirtv1.VirtualMachineInstance) { v.Status.Conditions = nil })),
		want: want{action: Blocks, why: "no LiveMigratable condition"}, failed: true,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(c.h, c.hosts, Options{Force: c.force})
			if err != nil {
				t.Fatal(err)
			}
			v := verdict(t, r, c.vm)
			if v.Action != c.want.action || v.Reason != c.want.reason || !slices.Equal(v.Targets, c.want.targets) || !strings.Contains(v.Why, c.want.why) {
				t.Errorf("verdict %+v\nwant %+v", v, c.want)
			}
			if r.Failed() != c.failed {
				t.Errorf("Failed() = %v, want %v", r.Failed(), c.failed)
			}
			var losses []string
			for _, l := range r.Losses {
				losses = append(losses, l.Group+" "+itoa(l.Down)+"/"+itoa(l.Members)+" "+map[bool]string{true: "true", false: "false"}[l.Certain])
			}
			if !slices.Equal(losses, c.losses) {
				t.Errorf("losses %v, want %v", losses, c.losses)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// guestNode is a guest node as RKE2 labels a control-plane+etcd node.
func guestNode(name string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/etcd": "true"}}}
}

// TestQuorum: etcd needs a majority (2 of 3) up; two of three
// control-plane VMs shut down loses it.
func TestQuorum(t *testing.T) {
	h := snapshot(threeHosts(), guestVMI("g-cp-0", "h1", "g", "cp", vgpu), guestVMI("g-cp-1", "h2", "g", "cp", vgpu), guestVMI("g-cp-2", "h3", "g", "cp", vgpu))
	force := Options{Force: true}
	one, err := Check(h, []string{"h1"}, force)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Losses) != 0 || one.Failed() {
		t.Errorf("one host of three: losses %+v, failed %v", one.Losses, one.Failed())
	}
	two, _ := Check(h, []string{"h1", "h2"}, force)
	if len(two.Losses) != 1 || two.Losses[0].Certain || two.Losses[0].Down != 2 || two.Failed() {
		t.Errorf("without roles two hosts: %+v (want one uncertain pool majority loss, not failed)", two.Losses)
	}
	h.GuestNodes, h.GuestCluster = []corev1.Node{guestNode("g-cp-0"), guestNode("g-cp-1"), guestNode("g-cp-2")}, "g"
	two, _ = Check(h, []string{"h1", "h2"}, force)
	var etcd *Loss
	for i, l := range two.Losses {
		if l.Group == "etcd" {
			etcd = &two.Losses[i]
		}
	}
	if etcd == nil || !etcd.Certain || etcd.Down != 2 || etcd.Members != 3 || !two.Failed() {
		t.Fatalf("with roles two hosts of three: %+v, want etcd 2 of 3 down, failed", two.Losses)
	}
	for _, l := range two.Losses {
		if l.Group == "control plane" {
			t.Errorf("control plane reported lost with one of three up: %+v", l)
		}
	}
	all, _ := Check(h, []string{"h1", "h2", "h3"}, force)
	groups := map[string]bool{}
	for _, l := range all.Losses {
		groups[l.Group] = l.Certain
	}
	if !groups["etcd"] || !groups["control plane"] || !groups["pool cp"] {
		t.Errorf("all three hosts: %+v, want etcd, control plane and pool cp lost", all.Losses)
	}
}

func TestUnknownHostsAllAtOnce(t *testing.T) {
	_, err := Check(snapshot(threeHosts()), []string{"h1", "nope", "h9"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "unknown hosts nope, h9") || !strings.Contains(err.Error(), "h1, h2, h3") {
		t.Errorf("error %v", err)
	}
}

// TestUpgradeOrder: Harvester hands the upgrade to Rancher's planner with
// concurrency 1: etcd nodes, then control plane, then workers.
func TestUpgradeOrder(t *testing.T) {
	nodes := []corev1.Node{
		host("w1", "a"), host("m2", "a", "node-role.kubernetes.io/control-plane", "true", "node-role.kubernetes.io/etcd", "true"),
		host("cp", "a", "node-role.kubernetes.io/control-plane", "true"),
		host("m1", "a", "node-role.kubernetes.io/control-plane", "true", "node-role.kubernetes.io/etcd", "true"),
		host("witness", "a", "node-role.kubernetes.io/etcd", "true"), host("a0", "a"),
	}
	if got, want := UpgradeOrder(nodes), []string{"m1", "m2", "witness", "cp", "a0", "w1"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	// Within a tier the planner orders by Machine name (collect in
	// pkg/capr/planner/planentry.go), which the host's
	// cluster.x-k8s.io/machine annotation gives, not by host name.
	for i, m := range map[int]string{0: "custom-01", 1: "custom-0a", 3: "custom-0b", 5: "custom-0c"} {
		nodes[i].Annotations = map[string]string{harvester.AnnMachine: m}
	}
	if got, want := UpgradeOrder(nodes), []string{"m2", "m1", "witness", "cp", "w1", "a0"}; !slices.Equal(got, want) {
		t.Errorf("order by Machine %v, want %v", got, want)
	}
}

// TestUpgradeOneHostAtATime: Harvester's pre-drain stops what its
// detector deems non-migratable (host devices, a nodeSelector, node
// affinity no other host matches; GPUs are not looked at), KubeVirt
// migrates the LiveMigratable VMIs off the drain-tainted host, and the
// pre-drain waits for the rest. A VM migrated at step 1 is judged again on
// its new host; one stopped stays stopped.
func TestUpgradeOneHostAtATime(t *testing.T) {
	nodes := []corev1.Node{host("h1", "a"), host("h2", "b")}
	hostDev := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.HostDevices = []kubevirtv1.HostDevice{{Name: "d", DeviceName: "vendor.com/nic"}}
		strategy(kubevirtv1.EvictionStrategyLiveMigrateIfPossible)(v)
		notMigratable("HostDeviceNotLiveMigratable")(v)
	}
	h := snapshot(nodes, guestVMI("g-p-0", "h1", "g", "p"), guestVMI("g-gpu-0", "h1", "g", "gpu", vgpu), guestVMI("g-dev-0", "h2", "g", "dev", hostDev),
		guestVMI("g-pin-0", "h2", "g", "pin", func(v *kubevirtv1.VirtualMachineInstance) {
			v.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "h2"}
		}))
	r, err := Check(h, nil, Options{Upgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range r.VMs {
		got = append(got, itoa(v.Step)+" "+v.Host+" "+v.Name+" "+v.Action+" "+v.To)
	}
	want := []string{"1 h1 g-gpu-0 blocks ", "1 h1 g-p-0 migrates h2",
		"2 h2 g-dev-0 shut down ", "2 h2 g-p-0 migrates h1", "2 h2 g-pin-0 shut down "}
	if !slices.Equal(got, want) {
		t.Errorf("steps %q\nwant %q", got, want)
	}
	if v := verdict(t, r, "g-gpu-0"); !strings.Contains(v.Why, "the upgrade's pre-drain waits for it") {
		t.Errorf("vGPU VM: %+v", v)
	}
	var lost []string
	for _, l := range r.Losses {
		lost = append(lost, itoa(l.Step)+" "+l.Group)
	}
	if !slices.Equal(lost, []string{"2 pool dev", "2 pool pin"}) || !r.Failed() {
		t.Errorf("losses %v (failed %v), want pools dev and pin lost at step 2", lost, r.Failed())
	}
}

// TestEvictionStrategyDefault: the VMI's, else KubeVirt's configuration
// (None when it sets none), else Harvester's LiveMigrate.
func TestEvictionStrategyDefault(t *testing.T) {
	unset := func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.EvictionStrategy = nil }
	h := snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", unset), guestVMI("g-p-1", "h2", "g", "p", unset))
	r, _ := Check(h, []string{"h1"}, Options{})
	if v := verdict(t, r, "g-p-0"); v.Action != Migrates || v.Strategy != "LiveMigrate (Harvester's default)" {
		t.Errorf("no KubeVirt object: %+v", v)
	}
	h.KubeVirt = &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}
	r, _ = Check(h, []string{"h1"}, Options{})
	if v := verdict(t, r, "g-p-0"); v.Action != ShutDown || v.Strategy != "None (KubeVirt's default)" {
		t.Errorf("KubeVirt without a strategy: %+v", v)
	}
	lmip := kubevirtv1.EvictionStrategyLiveMigrateIfPossible
	h.KubeVirt.Spec.Configuration.EvictionStrategy = &lmip
	r, _ = Check(h, []string{"h1"}, Options{})
	if v := verdict(t, r, "g-p-0"); v.Action != Migrates || v.Strategy != "LiveMigrateIfPossible (KubeVirt kubevirt)" {
		t.Errorf("KubeVirt with LiveMigrateIfPossible: %+v", v)
	}
}

// TestRoomCountsPodsAndMovedVMs: a host's launcher and other pods take
// room; a VM moved there by this check does too.
func TestRoomCountsPodsAndMovedVMs(t *testing.T) {
	nodes := []corev1.Node{host("h1", "a"), host("h2", "b"), host("h3", "c")}
	big := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("40Gi")
	}
	h := snapshot(nodes, guestVMI("g-a", "h1", "g", "p", big), guestVMI("g-b", "h1", "g", "p", big))
	h.Pods = []corev1.Pod{{Spec: corev1.PodSpec{NodeName: "h3", Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("30Gi")}}}}}}}
	r, _ := Check(h, []string{"h1"}, Options{})
	a, b := verdict(t, r, "g-a"), verdict(t, r, "g-b")
	// 62Gi each; h3 has 32Gi left for pods: only h2 takes a 40Gi VM, and once.
	if a.Action != Migrates || a.To != "h2" || !slices.Equal(a.Targets, []string{"h2"}) {
		t.Errorf("first VM %+v", a)
	}
	if b.Action != Blocks || !strings.Contains(b.Why, "h2: no room: memory") || !strings.Contains(b.Why, "h3: no room: memory") {
		t.Errorf("second VM %+v", b)
	}
}

// TestRoomCountsSidecarsAndOverhead: a host's pods take what
// kube-scheduler counts (component-helpers' PodRequests, Kubernetes
// v1.33): the containers, a sidecar (an init container with restartPolicy
// Always) beside them, and the pod overhead. Here 30Gi + 4Gi + 1Gi leave
// h2 27Gi of its 62Gi: no room for a 28Gi VM, which the containers alone
// (30Gi) would leave.
func TestRoomCountsSidecarsAndOverhead(t *testing.T) {
	nodes := []corev1.Node{host("h1", "a"), host("h2", "b")}
	vm := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("28Gi")
	}
	h := snapshot(nodes, guestVMI("g-a", "h1", "g", "p", vm))
	mem := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	h.Pods = []corev1.Pod{{Spec: corev1.PodSpec{NodeName: "h2",
		Containers:     []corev1.Container{{Name: "app", Resources: mem("30Gi")}},
		InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: mem("4Gi")}},
		Overhead:       corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	r, _ := Check(h, []string{"h1"}, Options{})
	if v := verdict(t, r, "g-a"); v.Action != Blocks || !strings.Contains(v.Why, "h2: no room: memory") {
		t.Errorf("VM %+v: want blocked, h2 without room for its memory", v)
	}
}

func TestReportFormats(t *testing.T) {
	h := snapshot(threeHosts(), guestVMI("g-gpu-0", "h1", "g", "gpu", vgpu), guestVMI("g-p-0", "h1", "g", "p", notMigratable("DisksNotLiveMigratable")))
	r, _ := Check(h, []string{"h1"}, Options{Force: true})
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# forced maintenance of h1", "default/g-gpu-0", "False (HostDeviceNotLiveMigratable)", "shut down", "LOSS default/g pool gpu after draining h1"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Failed bool
		VMs    []map[string]any `json:"vms"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || !got.Failed || len(got.VMs) != 2 || got.VMs[1]["action"] != "shut down" || got.VMs[0]["action"] != "shut down" || got.VMs[0]["reason"] != "HostDeviceNotLiveMigratable" {
		t.Errorf("json %v: %s", err, js.String())
	}
}

// TestUpgradeWitnessAndOthers: a witness host (label
// node-role.harvesterhci.io/witness) does not count, so with one other
// host Harvester's pre-drain stops every VM; a VM of no guest cluster is
// not judged but counted in a note.
func TestUpgradeWitnessAndOthers(t *testing.T) {
	nodes := []corev1.Node{host("h1", "a"), host("w", "a", "node-role.harvesterhci.io/witness", "true", "node-role.kubernetes.io/etcd", "true")}
	plain := guestVMI("plain", "h1", "", "")
	plain.Labels = nil
	plain.Status.Conditions[0].Status = corev1.ConditionFalse
	r, err := Check(snapshot(nodes, guestVMI("g-p-0", "h1", "g", "p"), plain), nil, Options{Upgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Hosts, []string{"w", "h1"}) {
		t.Errorf("order %v: the etcd witness goes first", r.Hosts)
	}
	if len(r.VMs) != 1 || r.VMs[0].Action != ShutDown || !strings.Contains(r.VMs[0].Why, "the only host") {
		t.Errorf("verdicts %+v", r.VMs)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.HasPrefix(n, "1 VMs of no guest cluster run on these hosts") && strings.Contains(n, "(1 with LiveMigratable False")
	}) {
		t.Errorf("notes %q", r.Notes)
	}
}

// TestUpgradeNoRoomShutsDownAfterTimeout: a live-migratable VM no other
// host has room for blocks maintenance mode (the drain keeps evicting),
// but in an upgrade upgrade_node.sh's wait_vms_out_or_shutdown stops the
// VM once its kubevirt-evacuation-* migration is Failed with a
// FailedMigration warning, which KubeVirt v1.7 gives it when the
// unschedulable target pod times out (300 s) in phase Scheduling.
func TestUpgradeNoRoomShutsDownAfterTimeout(t *testing.T) {
	nodes := threeHosts()[:2]
	nodes[1].Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("2Gi") // less than 2Gi + KubeVirt's overhead
	h := snapshot(nodes, guestVMI("g-p-0", "h1", "g", "p"))
	r, err := Check(h, nil, Options{Upgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	v := verdict(t, r, "g-p-0")
	if v.Step != 1 || v.Action != ShutDown || !strings.Contains(v.Why, "h2: no room: memory") ||
		!strings.Contains(v.Why, "phase Scheduling") || !strings.Contains(v.Why, "300 s") || !strings.Contains(v.Why, "after the migration timed out") {
		t.Errorf("upgrade verdict %+v, want shut down after the migration timed out", v)
	}
	// The pool's only VM is down: a loss, not a block.
	if len(r.Losses) != 1 || r.Losses[0].Group != "pool p" || r.Losses[0].Down != 1 {
		t.Errorf("losses %+v, want pool p lost", r.Losses)
	}
	r, err = Check(h, []string{"h1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict(t, r, "g-p-0"); v.Action != Blocks || !strings.Contains(v.Why, "phase Scheduling") || strings.Contains(v.Why, "Pending and") {
		t.Errorf("maintenance verdict %+v, want blocks in phase Scheduling", v)
	}
}
