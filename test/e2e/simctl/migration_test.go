package simctl

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var gvrVMIM = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}

func migratable(v *kubevirtv1.VirtualMachineInstance) bool {
	c := vmiCond(v, kubevirtv1.VirtualMachineInstanceIsMigratable)
	return hasIP(v) && c != nil && c.Status == corev1.ConditionTrue
}

// sshBanner reads the SSH server's identification line on addr:22.
func sshBanner(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "22"), 5*time.Second)
	if err != nil {
		t.Fatalf("ssh to %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("ssh banner of %s: %v", addr, err)
	}
	return line
}

func newMigration(ns, name, vmi string) *kubevirtv1.VirtualMachineInstanceMigration {
	return &kubevirtv1.VirtualMachineInstanceMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
	}
}

// TestLiveMigration: a migration moves the VMI to another host through
// KubeVirt's phases; the address, SSH and the topology annotations follow.
func TestLiveMigration(t *testing.T) {
	ns := testNamespace(t)
	createVM(t, ns, "mig", vmOpts{creator: true, userData: agentCloudConfig})
	before := waitVMI(t, ns, "mig", "running with an address, live-migratable", migratable)
	ip := before.Status.Interfaces[0].IP
	if b := sshBanner(t, ip); !strings.HasPrefix(b, "SSH-2.0-") {
		t.Fatalf("banner before = %q", b)
	}
	m := createObject(t, gvrVMIM, newMigration(ns, "m1", "mig"))
	done := waitFor(t, gvrVMIM, ns, "m1", "Succeeded", func(m *kubevirtv1.VirtualMachineInstanceMigration) bool {
		return m.Status.Phase == kubevirtv1.MigrationSucceeded || m.Status.Phase == kubevirtv1.MigrationFailed
	})
	if done.Status.Phase != kubevirtv1.MigrationSucceeded {
		t.Fatalf("migration phase %s", done.Status.Phase)
	}
	var phases []string
	for _, p := range done.Status.PhaseTransitionTimestamps {
		phases = append(phases, string(p.Phase))
	}
	// KubeVirt v1.7's phases of a local migration, in order.
	if got, want := strings.Join(phases, ","), "Pending,Scheduling,Scheduled,PreparingTarget,TargetReady,Running,Succeeded"; got != want {
		t.Errorf("phases = %s, want %s", got, want)
	}
	if done.Labels["kubevirt.io/vmi-name"] != "mig" {
		t.Errorf("migration labels = %v, want kubevirt.io/vmi-name=mig", done.Labels)
	}
	// Once migrated, the VMI owns both pods (status.activePods) and its
	// Ready condition is its target pod's, not the Succeeded source pod's.
	// Harvester's VMI controller (vmi_controller.go ReconcileFromHostLabels)
	// copies the new host's topology labels on a later reconcile, after
	// virt-handler wrote the new nodeName: wait for the hostname too.
	after := waitVMI(t, ns, "mig", "migrated, both pods active, annotated with its new host", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v.Status.MigrationState != nil && v.Status.MigrationState.Completed && len(v.Status.ActivePods) == 2 &&
			v.Annotations[harvester.HostnameKey] == v.Status.NodeName
	})

	ms := after.Status.MigrationState
	src, dst := before.Status.NodeName, after.Status.NodeName
	switch {
	case dst == src:
		t.Errorf("nodeName stayed %s", src)
	case ms.SourceNode != src || ms.TargetNode != dst || string(ms.MigrationUID) != string(m.GetUID()):
		t.Errorf("migrationState = %+v, want source %s target %s uid %s", ms, src, dst, m.GetUID())
	case ms.StartTimestamp == nil || ms.EndTimestamp == nil || ms.Failed || ms.Mode != kubevirtv1.MigrationPreCopy:
		t.Errorf("migrationState = %+v, want start/end timestamps, not failed, mode PreCopy", ms)
	case !strings.HasPrefix(ms.TargetPod, "virt-launcher-mig-"):
		t.Errorf("targetPod = %q, want virt-launcher-mig-*", ms.TargetPod)
	case after.Labels["kubevirt.io/nodeName"] != dst:
		t.Errorf("label kubevirt.io/nodeName = %q, want %s", after.Labels["kubevirt.io/nodeName"], dst)
	case after.Status.Phase != kubevirtv1.Running || after.Status.Interfaces[0].IP != ip:
		t.Errorf("after migration phase %s address %s, want Running %s", after.Status.Phase, after.Status.Interfaces[0].IP, ip)
	}
	host, err := env.kube.CoreV1().Nodes().Get(testContext(t), dst, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Annotations[harvester.ZoneKey] != host.Labels[harvester.ZoneKey] || after.Annotations[harvester.HostnameKey] != dst {
		t.Errorf("topology annotations %v, want zone %s hostname %s", after.Annotations, host.Labels[harvester.ZoneKey], dst)
	}
	if b := sshBanner(t, ip); !strings.HasPrefix(b, "SSH-2.0-") {
		t.Fatalf("banner after = %q", b)
	}
	// The VMI is Ready from the target's launcher pod once virt-controller,
	// which syncs the readiness gate kubevirt.io/virtual-machine-unpaused
	// only to the VMI's current pod (pkg/virt-controller/watch/vmi/
	// lifecycle.go, syncPausedConditionToPod), set it there after the
	// hand-off and kubelet reported the pod Ready.
	waitVMI(t, ns, "mig", "Ready from the target's launcher pod", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCond(v, kubevirtv1.VirtualMachineInstanceReady)
		return v.Status.NodeName == dst && c != nil && c.Status == corev1.ConditionTrue
	})
}

// TestMigrationRefused: virt-api refuses a migration of a VMI whose
// LiveMigratable is False with KubeVirt's message, and of a missing VMI.
func TestMigrationRefused(t *testing.T) {
	ns := testNamespace(t)
	rwo := claimTemplate("mig-rwo-disk", fixtureImage, nil)
	rwo.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	createVM(t, ns, "rwo", vmOpts{claims: []corev1.PersistentVolumeClaim{rwo}})
	waitVMI(t, ns, "rwo", "not live-migratable", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCond(v, kubevirtv1.VirtualMachineInstanceIsMigratable)
		return c != nil && c.Status == corev1.ConditionFalse
	})
	for _, tc := range []struct{ vmi, want string }{
		// migration-create-admitter.go isMigratable, with virt-handler's message for a RWO claim.
		{"rwo", "Cannot migrate VMI, Reason: DisksNotLiveMigratable, Message: cannot migrate VMI: PVC mig-rwo-disk is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)"},
		{"nope", `the VMI "` + ns + `/nope" does not exist`},
	} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(newMigration(ns, "m-"+tc.vmi, tc.vmi))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		_, err = env.dyn.Resource(gvrVMIM).Namespace(ns).Create(testContext(t), u, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("migration of %s: err = %v, want it to contain %q", tc.vmi, err, tc.want)
		}
	}
}

// simCLI runs bin/harvester-sim COMMAND --state-dir D ARGS... against the
// test's simulator (COMMAND may be "maintenance enable").
func simCLI(t *testing.T, command string, args ...string) (string, error) {
	t.Helper()
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	argv := append(strings.Fields(command), "--state-dir", env.sim.Dir)
	out, err := exec.Command(bin, append(argv, args...)...).CombinedOutput()
	return string(out), err
}

// preferHost is a preferred node affinity for one host: the VM lands there
// but may migrate away.
func preferHost(host string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}}}}}}}
}

// TestMaintenance: without force Harvester refuses a host with a VM that
// cannot migrate, naming it; with --force the migratable VMs migrate, the
// other is stopped (runStrategy Halted) and the host is completed;
// disable uncordons it and removes the annotation.
func TestMaintenance(t *testing.T) {
	const host = "harvester-node-2"
	ns := maintenanceScene(t, host)
	for _, name := range []string{"m-a", "m-b"} {
		createVM(t, ns, name, vmOpts{userData: agentCloudConfig, affinity: preferHost(host)})
	}
	rwo := claimTemplate("pinned-disk", fixtureImage, nil)
	rwo.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	createVM(t, ns, "stuck", vmOpts{userData: agentCloudConfig, affinity: preferHost(host), claims: []corev1.PersistentVolumeClaim{rwo}})
	for _, name := range []string{"m-a", "m-b", "stuck"} {
		v := waitVMI(t, ns, name, "running with an address", hasIP)
		if v.Status.NodeName != host {
			t.Fatalf("%s placed on %s, want %s", name, v.Status.NodeName, host)
		}
	}
	out, err := simCLI(t, "maintenance enable", "--timeout", "30s", host)
	// nodedrain_controller.go's refusal, with virt-handler's reason.
	want := "Non-migratable VMs found: " + ns + "/stuck cannot be migrated due to DisksNotLiveMigratable. Use 'force drain' to perform a collective shutdown"
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("enable without force: err %v, output:\n%s\nwant it to contain %q", err, out, want)
	}
	n, _ := env.kube.CoreV1().Nodes().Get(testContext(t), host, metav1.GetOptions{})
	if _, ok := n.Annotations[harvester.AnnMaintainStatus]; ok || n.Spec.Unschedulable {
		t.Fatalf("refused host has annotations %v unschedulable %v", n.Annotations, n.Spec.Unschedulable)
	}
	// As the issue writes it: --state-dir on `maintenance`, --force after HOST.
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exec.Command(bin, "maintenance", "--state-dir", env.sim.Dir, "enable", host, "--force").CombinedOutput()
	out = string(raw)
	if err != nil {
		t.Fatalf("enable --force: %v\n%s", err, out)
	}
	for _, line := range []string{"migrated  " + ns + "/m-a -> ", "migrated  " + ns + "/m-b -> ", "shut down " + ns + "/stuck"} {
		if !strings.Contains(out, line) {
			t.Errorf("report lacks %q:\n%s", line, out)
		}
	}
	n, _ = env.kube.CoreV1().Nodes().Get(testContext(t), host, metav1.GetOptions{})
	if n.Annotations[harvester.AnnMaintainStatus] != harvester.MaintainCompleted || !n.Spec.Unschedulable {
		t.Errorf("host annotations %v unschedulable %v, want completed and cordoned", n.Annotations, n.Spec.Unschedulable)
	}
	waitVM(t, ns, "stuck", "halted", func(vm *kubevirtv1.VirtualMachine) bool {
		return vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == kubevirtv1.RunStrategyHalted
	})
	for _, name := range []string{"m-a", "m-b"} {
		v := waitVMI(t, ns, name, "running elsewhere", hasIP)
		if v.Status.NodeName == host {
			t.Errorf("%s still on %s", name, host)
		}
	}
	if out, err := simCLI(t, "maintenance disable", host); err != nil {
		t.Fatalf("disable: %v\n%s", err, out)
	}
	n, _ = env.kube.CoreV1().Nodes().Get(testContext(t), host, metav1.GetOptions{})
	if _, ok := n.Annotations[harvester.AnnMaintainStatus]; ok || n.Spec.Unschedulable {
		t.Errorf("after disable: annotations %v unschedulable %v", n.Annotations, n.Spec.Unschedulable)
	}
}

// TestUpgrade: the upgrade's pre-drain takes every host in turn; the
// migratable VMs move away from each host and keep their addresses.
func TestUpgrade(t *testing.T) {
	ns := testNamespace(t)
	aloneOnHosts(t, ns)
	addr := map[string]string{}
	for _, name := range []string{"u-0", "u-1", "u-2"} {
		createVM(t, ns, name, vmOpts{userData: agentCloudConfig})
	}
	for _, name := range []string{"u-0", "u-1", "u-2"} {
		addr[name] = waitVMI(t, ns, name, "running with an address, live-migratable", migratable).Status.Interfaces[0].IP
	}
	out, err := simCLI(t, "upgrade", "--timeout", "60s")
	if err != nil {
		t.Fatalf("upgrade: %v\n%s", err, out)
	}
	for _, host := range []string{"harvester-node-0", "harvester-node-1", "harvester-node-2"} {
		if !strings.Contains(out, "host "+host+"\n") {
			t.Errorf("no report for %s:\n%s", host, out)
		}
	}
	// Other tests' VMs share the simulator: judge this test's lines.
	migrated := 0
	for _, line := range strings.Split(out, "\n") {
		switch {
		case !strings.Contains(line, " "+ns+"/"):
		case strings.Contains(line, "migrated "):
			migrated++
		default:
			t.Errorf("report line %q: want only migrations", line)
		}
	}
	if migrated < 3 {
		t.Errorf("report:\n%s\nwant each of the 3 VMs migrated at least once", out)
	}
	for name, ip := range addr {
		v := waitVMI(t, ns, name, "running", running)
		if v.Status.Interfaces[0].IP != ip {
			t.Errorf("%s address %s, want %s", name, v.Status.Interfaces[0].IP, ip)
		}
	}
	nodes, _ := env.kube.CoreV1().Nodes().List(testContext(t), metav1.ListOptions{})
	for _, n := range nodes.Items {
		for _, taint := range n.Spec.Taints {
			if taint.Key == harvester.TaintKubeVirtDrain {
				t.Errorf("%s still tainted %s", n.Name, taint.Key)
			}
		}
	}
}
