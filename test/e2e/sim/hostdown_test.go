package sim_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// Timing of the host-failure simulator: kube-controller-manager's
// --node-monitor-grace-period, and the vm-force-reset-policy the test sets.
const (
	hdGrace     = 5 * time.Second
	hdPeriod    = 3 * time.Second
	hdMigration = 4 * time.Second
	hdPolicy    = `{"enable":true,"period":3,"vmMigrationTimeout":4}`
	hdCluster   = "hd"
)

// TestFaultHostDown: `harvester-sim fault host-down`, with guest clusters
// and a short grace period (tuned for the test while the package's
// simulator runs). Its two cases run one after the other: each sets its
// own vm-force-reset-policy, uses its own VM, brings its host back and
// deletes its VM. The package's tests run one at a time, so no other test
// sees the host down.
func TestFaultHostDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	simtest.HostFailures(ctx, t, kube, dyn, hdGrace, hdPolicy)
	// The VMs go when the test ends, not after each case: the guest
	// cluster's control plane stops with its last VM and would start anew,
	// on another port, under the second case.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		for _, name := range []string{"hd-vm", "back-vm"} {
			if err := simtest.DeleteVM(ctx, virt, "default", name); err != nil {
				t.Error(err)
			}
		}
	})
	hd := hostDownSim{sim: simulator, kube: kube, virt: virt, dyn: dyn}
	t.Run("the VM restarts elsewhere", func(t *testing.T) { restartedElsewhere(ctx, t, hd) })
	t.Run("a host back in time keeps its VM", func(t *testing.T) { backInTime(ctx, t, hd) })
}

// hostDownSim is TestFaultHostDown's simulator and its admin clients.
type hostDownSim struct {
	sim  *simtest.Sim
	kube kubernetes.Interface
	virt kubevirt.Interface
	dyn  dynamic.Interface
}

// restartedElsewhere: host-down on the host of a RerunOnFailure VM of a
// guest cluster. The real node lifecycle
// controller marks the host Ready Unknown and taints it unreachable only
// after the grace period; the simulated Harvester then taints it
// kubevirt.io/drain after `period` and out-of-service `vmMigrationTimeout`
// later (the setting set as an admin does); the guest stops answering and
// its guest node turns NotReady; the VM restarts on another host and its
// guest node is Ready again; the other hosts stay Ready throughout; with
// --remove the host is Ready again and every taint of the failure is gone.
func restartedElsewhere(ctx context.Context, t *testing.T, hd hostDownSim) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	iso := harness.Current().Isolation
	s, kc, vc := hd.sim, hd.kube, hd.virt
	if err := simtest.SetForceResetPolicy(ctx, hd.dyn, hdPolicy); err != nil {
		t.Fatal(err)
	}

	first, guest := runningGuestVM(ctx, t, s, vc, "hd-vm")
	host, ip := first.Status.NodeName, first.Status.Interfaces[0].IP
	if iso.Isolated && !answersWithin(ctx, ip) {
		t.Fatalf("guest %s does not answer SSH before the fault", ip)
	}
	others := otherHosts(ctx, t, kc, host)

	tl, err := simtest.WatchNode(ctx, kc, host)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Stop()
	down := time.Now()
	if err := s.Fault(ctx, "host-down", host); err != nil {
		t.Fatal(err)
	}
	bringBackOnFailure(ctx, t, s, host)
	t.Logf("host-down %s returned after %s", host, time.Since(down).Round(time.Millisecond))
	waitGuestNode(ctx, t, guest, "hd-vm", corev1.ConditionUnknown)
	if iso.Isolated && answers(ip) {
		t.Errorf("guest %s still answers SSH on the down host", ip)
	}

	// The VM restarts elsewhere once the host is out of service.
	second := waitVMIOn(ctx, t, vc, "hd-vm", "restarted on another host", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v.UID != first.UID && v.Status.Phase == kubevirtv1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
	})
	restarted := time.Now()
	if second.Status.NodeName == host {
		t.Errorf("VM restarted on the down host %s", host)
	}
	waitGuestNode(ctx, t, guest, "hd-vm", corev1.ConditionTrue)
	if iso.Isolated && !answersWithin(ctx, second.Status.Interfaces[0].IP) {
		t.Errorf("restarted guest %s does not answer SSH", second.Status.Interfaces[0].IP)
	}

	// The order and timing of the node's states.
	unknown, unreachable := tl.At("Ready Unknown"), tl.At("node.kubernetes.io/unreachable:NoExecute")
	drain, oos := tl.At("kubevirt.io/drain:NoSchedule"), tl.At("node.kubernetes.io/out-of-service:NoExecute")
	t.Logf("host %s: %v; Unknown after %s, drain %s later, out-of-service %s later, VM running elsewhere %s later",
		host, tl.Order(), unknown.Sub(down).Round(100*time.Millisecond), drain.Sub(unknown).Round(100*time.Millisecond),
		oos.Sub(drain).Round(100*time.Millisecond), restarted.Sub(oos).Round(100*time.Millisecond))
	// Harvester counts the period from the Ready condition's and the
	// vmMigrationTimeout from the drained condition's lastTransitionTime,
	// which the API stores in whole seconds: each step may come up to a
	// second early by the test's clock, and a watch may deliver late.
	const slack, whole = time.Second, time.Second
	switch {
	case unknown.IsZero() || unreachable.IsZero() || drain.IsZero() || oos.IsZero():
		t.Fatalf("host %s states seen: %v", host, tl.Order())
	case unknown.Sub(down) < hdGrace-2*slack: // the last renewal may be up to a quarter of the grace before down
		t.Errorf("Ready Unknown %s after host-down, before the grace period %s", unknown.Sub(down), hdGrace)
	case drain.Sub(unknown) < hdPeriod-whole-slack || drain.Sub(unknown) > hdPeriod+5*slack:
		t.Errorf("drain taint %s after Ready Unknown, want the policy's period %s", drain.Sub(unknown), hdPeriod)
	case oos.Sub(drain) < hdMigration-whole-slack || oos.Sub(drain) > hdMigration+5*slack:
		t.Errorf("out-of-service taint %s after the drain taint, want the policy's vmMigrationTimeout %s", oos.Sub(drain), hdMigration)
	case restarted.Sub(oos) > 40*time.Second: // pod GC runs every 20 s
		t.Errorf("VM running elsewhere only %s after the out-of-service taint", restarted.Sub(oos))
	case restarted.Before(oos):
		t.Errorf("VM restarted before the host was out of service")
	}
	for _, o := range others {
		if n, err := kc.CoreV1().Nodes().Get(ctx, o, metav1.GetOptions{}); err != nil || simtest.NodeReady(n) != corev1.ConditionTrue {
			t.Errorf("host %s is not Ready while only %s is down: %v", o, host, err)
		}
	}

	if err := s.Fault(ctx, "host-down", "--remove", host); err != nil {
		t.Fatal(err)
	}
	if _, err := simtest.WaitNode(ctx, kc, host, func(n *corev1.Node) bool {
		return simtest.NodeReady(n) == corev1.ConditionTrue && !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
			return tt.Key == "kubevirt.io/drain" || tt.Key == corev1.TaintNodeOutOfService || tt.Key == corev1.TaintNodeUnreachable || tt.Key == corev1.TaintNodeNotReady
		}) && !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == harvester.NodeConditionDrained })
	}); err != nil {
		n, _ := kc.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
		t.Fatalf("host %s back: %v; taints %v, conditions %v", host, err, n.Spec.Taints, n.Status.Conditions)
	}
}

// backInTime: a host back before Harvester's
// out-of-service step keeps its VM: the drain taint (the policy's period
// passed) and the unreachable taints go, so does the Drained condition.
// KubeVirt's evacuation controller made a migration on the drain taint;
// it waited for the down host's virt-handler and, the host back, moves
// the same VMI live to another host (KubeVirt cancels no evacuation when
// the taint goes). The VMI is Ready from its new pod, keeps its address,
// its guest answers and its guest node is Ready.
func backInTime(ctx context.Context, t *testing.T, hd hostDownSim) {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	iso := harness.Current().Isolation
	s, kc, vc := hd.sim, hd.kube, hd.virt
	if err := simtest.SetForceResetPolicy(ctx, hd.dyn, `{"enable":true,"period":1,"vmMigrationTimeout":600}`); err != nil {
		t.Fatal(err)
	}
	first, guest := runningGuestVM(ctx, t, s, vc, "back-vm")
	host, ip := first.Status.NodeName, first.Status.Interfaces[0].IP
	if err := s.Fault(ctx, "host-down", host); err != nil {
		t.Fatal(err)
	}
	bringBackOnFailure(ctx, t, s, host)
	if _, err := simtest.WaitNode(ctx, kc, host, func(n *corev1.Node) bool {
		return simtest.HasTaint(n, "kubevirt.io/drain", corev1.TaintEffectNoSchedule)
	}); err != nil {
		t.Fatal(err)
	}
	// KubeVirt v1.7's evacuation controller migrates every VMI of a host
	// with the drain taint (evacuation.go vmisToMigrate) without setting
	// status.evacuationNodeName: only virt-api's eviction of a launcher Pod
	// sets that. Its migration controller hands the migration to the
	// source host (migrationState), whose virt-handler is down.
	waitVMIOn(ctx, t, vc, "back-vm", "Ready False from its launcher pod, its evacuation handed off", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCondition(v, kubevirtv1.VirtualMachineInstanceReady)
		ms := v.Status.MigrationState
		return c != nil && c.Status == corev1.ConditionFalse && ms != nil && ms.SourceNode == host && !ms.Completed
	})
	waitGuestNode(ctx, t, guest, "back-vm", corev1.ConditionUnknown)

	if err := s.Fault(ctx, "host-down", "--remove", host); err != nil {
		t.Fatal(err)
	}
	if _, err := simtest.WaitNode(ctx, kc, host, func(n *corev1.Node) bool {
		return simtest.NodeReady(n) == corev1.ConditionTrue && len(n.Spec.Taints) == 0 &&
			!slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == harvester.NodeConditionDrained })
	}); err != nil {
		n, _ := kc.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
		t.Fatalf("host %s back: %v; taints %v, conditions %v", host, err, n.Spec.Taints, n.Status.Conditions)
	}
	back := waitVMIOn(ctx, t, vc, "back-vm", "migrated by its evacuation, Ready again", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCondition(v, kubevirtv1.VirtualMachineInstanceReady)
		ms := v.Status.MigrationState
		return c != nil && c.Status == corev1.ConditionTrue && ms != nil && ms.Completed
	})
	ms := back.Status.MigrationState
	if back.UID != first.UID || ms.SourceNode != host || back.Status.NodeName == host || back.Status.NodeName != ms.TargetNode {
		t.Errorf("VMI %s on %s (migration %s -> %s) after the host came back; it was %s on %s",
			back.UID, back.Status.NodeName, ms.SourceNode, ms.TargetNode, first.UID, host)
	}
	if back.Status.Interfaces[0].IP != ip {
		t.Errorf("address %s after the migration, want %s", back.Status.Interfaces[0].IP, ip)
	}
	m, err := vc.KubevirtV1().VirtualMachineInstanceMigrations("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(m.Items, func(m kubevirtv1.VirtualMachineInstanceMigration) bool { return m.UID == ms.MigrationUID }); i < 0 ||
		m.Items[i].Annotations[kubevirtv1.EvacuationMigrationAnnotation] != host {
		t.Errorf("migration %s is not an evacuation of %s: %+v", ms.MigrationUID, host, m.Items)
	}
	waitGuestNode(ctx, t, guest, "back-vm", corev1.ConditionTrue)
	if iso.Isolated && !answersWithin(ctx, ip) {
		t.Errorf("guest %s does not answer SSH after its host came back", ip)
	}
	// The source pod Succeeds; the VMI is Ready from the target's pod once
	// virt-controller, which syncs the readiness gate
	// kubevirt.io/virtual-machine-unpaused only to the VMI's current pod
	// (pkg/virt-controller/watch/vmi/lifecycle.go, syncPausedConditionToPod),
	// set it there after the hand-off and kubelet reported the pod Ready.
	waitVMIOn(ctx, t, vc, "back-vm", "Ready from its target's pod", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCondition(v, kubevirtv1.VirtualMachineInstanceReady)
		return v.Status.NodeName == ms.TargetNode && c != nil && c.Status == corev1.ConditionTrue
	})
}

// bringBackOnFailure ends the host's failure when the test fails before
// it does: the next case on the same simulator starts with every host up.
func bringBackOnFailure(ctx context.Context, t *testing.T, s *simtest.Sim, host string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := s.Fault(ctx, "host-down", "--remove", host); err != nil {
			t.Logf("bring %s back: %v", host, err)
		}
	})
}

// runningGuestVM creates the guest-cluster VM name (hostDownVM) and
// waits until its VMI runs with an address and its guest node is Ready;
// it returns that VMI and the guest cluster's client.
func runningGuestVM(ctx context.Context, t *testing.T, s *simtest.Sim, vc kubevirt.Interface, name string) (*kubevirtv1.VirtualMachineInstance, kubernetes.Interface) {
	t.Helper()
	if _, err := vc.KubevirtV1().VirtualMachines("default").Create(ctx, hostDownVM(name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vmi := waitVMIOn(ctx, t, vc, name, "Running with an address", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v.Status.Phase == kubevirtv1.Running && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
	})
	guest := guestClient(ctx, t, s)
	waitGuestNode(ctx, t, guest, name, corev1.ConditionTrue)
	return vmi, guest
}

func vmiCondition(v *kubevirtv1.VirtualMachineInstance, t kubevirtv1.VirtualMachineInstanceConditionType) *kubevirtv1.VirtualMachineInstanceCondition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == t {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

// TestFaultHostDownRefusesUnknownHost: a name that is no host is refused,
// naming the hosts.
func TestFaultHostDownRefusesUnknownHost(t *testing.T) {
	out, err := simCLI(t, "fault", "--state-dir", simulator.Dir, "host-down", "harvester-node-9")
	if err == nil || !strings.Contains(out, `no host "harvester-node-9": the hosts are harvester-node-0, harvester-node-1, harvester-node-2`) {
		t.Errorf("host-down of no host: %v\n%s", err, out)
	}
}

func hostDownVM(name string) *kubevirtv1.VirtualMachine {
	strategy := kubevirtv1.RunStrategyRerunOnFailure
	labels := map[string]string{harvester.LabelGuestCluster: hdCluster}
	// Harvester's VMs carry LiveMigrateIfPossible (pkg/builder/vm.go,
	// pkg/data/template.go); its KubeVirt CR sets no cluster-wide strategy.
	evict := kubevirtv1.EvictionStrategyLiveMigrateIfPossible
	spec := kubevirtv1.VirtualMachineInstanceSpec{EvictionStrategy: &evict}
	spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	// What Harvester's webhook wants of any VM: a guest memory or a memory
	// limit (its validator), and a CPU topology (every VM its UI makes has
	// one). KubeVirt gives a VM without a guest memory its memory request,
	// and Harvester's mutator gives one without a topology one core: the
	// same VM.
	guest := resource.MustParse("1Gi")
	spec.Domain.Memory = &kubevirtv1.Memory{Guest: &guest}
	spec.Domain.CPU = &kubevirtv1.CPU{Cores: 1}
	spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{Name: "nic-0", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}}}
	spec.Networks = []kubevirtv1.Network{{Name: "nic-0", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "default/vlan1"}}}}
	spec.Domain.Devices.Disks = []kubevirtv1.Disk{{Name: "cloudinitdisk", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}}}
	spec.Volumes = []kubevirtv1.Volume{{Name: "cloudinitdisk", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{
		UserData: "#cloud-config\npackages:\n  - qemu-guest-agent\n"}}}}
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &strategy, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
}

func waitVMIOn(ctx context.Context, t *testing.T, vc kubevirt.Interface, name, what string, cond func(*kubevirtv1.VirtualMachineInstance) bool) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	k := kubeapi.KindOf[*kubevirtv1.VirtualMachineInstanceList]("VMI", &kubevirtv1.VirtualMachineInstance{}, vc.KubevirtV1().VirtualMachineInstances("default"))
	v, err := kubeapi.Wait(ctx, k, "default", name, 0, func(v *kubevirtv1.VirtualMachineInstance) (bool, error) { return v != nil && cond(v), nil })
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		last, _ := vc.KubevirtV1().VirtualMachineInstances("default").Get(rctx, name, metav1.GetOptions{})
		var ms []byte
		if last != nil {
			ms, _ = json.Marshal(last.Status.MigrationState)
		}
		var phases []string
		if migs, err := vc.KubevirtV1().VirtualMachineInstanceMigrations("default").List(rctx, metav1.ListOptions{}); err == nil {
			for _, m := range migs.Items {
				phases = append(phases, m.Name+" "+string(m.Status.Phase))
			}
		}
		t.Fatalf("VMI %s: waiting for %s: %v; migrationState %s; migrations %v; last: %+v", name, what, err, ms, phases, last)
	}
	return v
}

// guestClient is the admin client of the guest cluster hdCluster.
func guestClient(ctx context.Context, t *testing.T, s *simtest.Sim) kubernetes.Interface {
	t.Helper()
	path := filepath.Join(s.Dir, "guests", hdCluster, "kubeconfig")
	for ctx.Err() == nil {
		if _, err := os.Stat(path); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("guest cluster %s: %v", hdCluster, err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

func waitGuestNode(ctx context.Context, t *testing.T, guest kubernetes.Interface, name string, ready corev1.ConditionStatus) {
	t.Helper()
	if _, err := simtest.WaitNode(ctx, guest, name, func(n *corev1.Node) bool { return simtest.NodeReady(n) == ready }); err != nil {
		t.Fatalf("guest node %s Ready %s: %v", name, ready, err)
	}
}

func otherHosts(ctx context.Context, t *testing.T, kc kubernetes.Interface, host string) []string {
	t.Helper()
	list, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		if n.Name != host {
			out = append(out, n.Name)
		}
	}
	return out
}

// answerWait bounds answersWithin: the guest network follows the VMI's
// host as its virt-handler reconciles it, which a loaded machine can delay
// by seconds after the VMI and the guest node report Ready (a single try
// once failed in make test with the load average at 30).
const answerWait = 30 * time.Second

// answersWithin reports whether something accepts TCP on ip:22 within
// answerWait (or ctx's end), trying every half second.
func answersWithin(ctx context.Context, ip string) bool {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, answerWait, true, func(context.Context) (bool, error) {
		return answers(ip), nil
	}) == nil
}

// answers reports whether something accepts TCP on ip:22 now.
func answers(ip string) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "22"), 2*time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
