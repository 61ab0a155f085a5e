package kubevip

import (
	"encoding/binary"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"sigs.k8s.io/yaml"
)

// chartDaemonSet is kube-vip's DaemonSet as a guest cluster holds it:
// testdata/daemonset.yaml, as harvester-bootstrap rendered it for kube-vip
// v1.2.3 (a fixture: the simulator runs whatever DaemonSet the guest holds,
// and imports nothing of the product).
func chartDaemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	b, err := os.ReadFile("testdata/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatal(err)
	}
	return &ds
}

func TestSchedulable(t *testing.T) {
	ds := chartDaemonSet(t)
	uninitialized := corev1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name   string
		labels map[string]string
		taints []corev1.Taint
		want   bool
		why    string
	}{
		{"K3s server", map[string]string{"node-role.kubernetes.io/control-plane": "true"}, nil, true, ""},
		{"RKE1 control plane", map[string]string{"node-role.kubernetes.io/controlplane": "true"}, nil, true, ""},
		{"worker", map[string]string{"kubernetes.io/hostname": "w"}, nil, false, "required node affinity"},
		{"not initialised by the cloud provider", map[string]string{"node-role.kubernetes.io/control-plane": "true"}, []corev1.Taint{uninitialized}, false, "taint " + cloudproviderapi.TaintExternalCloudProvider + ":NoSchedule not tolerated"},
		{"unreachable (daemon pods tolerate it)", map[string]string{"node-role.kubernetes.io/control-plane": "true"},
			[]corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}}, true, ""},
		{"control-plane taint (tolerated by the chart)", map[string]string{"node-role.kubernetes.io/control-plane": "true"},
			[]corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: c.labels}, Spec: corev1.NodeSpec{Taints: c.taints}}
			ok, why := Schedulable(ds, node)
			if ok != c.want || !strings.Contains(why, c.why) {
				t.Fatalf("Schedulable = %v %q, want %v %q", ok, why, c.want, c.why)
			}
		})
	}
}

func TestEnvironmentAndArgv(t *testing.T) {
	ds := chartDaemonSet(t)
	c, err := Container(ds)
	if err != nil {
		t.Fatal(err)
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "vip_nodename", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
	env, err := Environment(c, PodInfo{NodeName: "node-a", Namespace: "kube-system"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vip_arp=true", "svc_enable=true", "vip_interface=", "vip_nodename=node-a"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment %v has no %s", env, want)
		}
	}
	argv, err := Argv(c, "/bin/kube-vip")
	if err != nil || !slices.Equal(argv, []string{"/bin/kube-vip", "manager"}) {
		t.Fatalf("Argv = %v, %v", argv, err)
	}

	bad := &corev1.Container{Command: []string{"/bin/sh"}, EnvFrom: []corev1.EnvFromSource{{}}, Env: []corev1.EnvVar{
		{Name: "a", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
		{Name: "b", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
	}}
	_, err = Environment(bad, PodInfo{})
	for _, want := range []string{"envFrom", "env a: only fieldRef", "env b: fieldRef metadata.labels"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Environment error %v does not say %q", err, want)
		}
	}
	if _, err := Argv(bad, "/bin/kube-vip"); err == nil || !strings.Contains(err.Error(), `"/bin/sh"`) {
		t.Errorf("Argv of another command: %v", err)
	}
}

func arpFrame(op uint16, sender, target netip.Addr) []byte {
	f := make([]byte, 42)
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], 0x0800)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], op)
	copy(a[8:], []byte{2, 0, 0, 0, 0, 1})
	copy(a[14:], sender.AsSlice())
	copy(a[24:], target.AsSlice())
	return f
}

func TestGratuitousARP(t *testing.T) {
	vip, other := netip.MustParseAddr("198.51.100.10"), netip.MustParseAddr("198.51.100.1")
	if addr, mac, ok := GratuitousARP(arpFrame(1, vip, vip)); !ok || addr != vip || mac.String() != "02:00:00:00:00:01" {
		t.Fatalf("gratuitous request: %v %v %v", addr, mac, ok)
	}
	if _, _, ok := GratuitousARP(arpFrame(2, vip, vip)); !ok {
		t.Fatal("gratuitous reply not recognised")
	}
	if _, _, ok := GratuitousARP(arpFrame(1, vip, other)); ok {
		t.Fatal("an ordinary ARP request taken for a gratuitous one")
	}
	if _, _, ok := GratuitousARP(arpFrame(1, vip, vip)[:30]); ok {
		t.Fatal("a short frame taken for ARP")
	}
}

func TestErrorLine(t *testing.T) {
	msg, ok := ErrorLine(`time=2026-11-25T21:00:00Z level=ERROR msg="checking interface" err="eth9 is not valid interface, reason: ..."`)
	if !ok || !strings.HasPrefix(msg, `msg="checking interface"`) {
		t.Fatalf("ErrorLine = %q %v", msg, ok)
	}
	msg, ok = ErrorLine(`2026/11/25 21:11:17 ERROR checking interface err="eth9 is not valid interface, reason: get eth9 failed"`)
	if !ok || msg != `checking interface err="eth9 is not valid interface, reason: get eth9 failed"` {
		t.Fatalf("ErrorLine = %q %v", msg, ok)
	}
	msg, ok = ErrorLine(`harvester-sim: kube-vip-exec: mount a tmpfs on /run: operation not permitted`)
	if !ok || msg != "mount a tmpfs on /run: operation not permitted" {
		t.Fatalf("ErrorLine(helper) = %q %v", msg, ok)
	}
	msg, ok = ErrorLine(`E1125 21:11:17.123456      12 leaderelection.go:436] error retrieving resource lock kube-system/plndr-svcs-lock: leases.coordination.k8s.io "plndr-svcs-lock" is forbidden`)
	if !ok || !strings.HasPrefix(msg, "error retrieving resource lock") {
		t.Fatalf("ErrorLine(klog) = %q %v", msg, ok)
	}
	for _, line := range []string{`time=x level=INFO msg="starting"`, `2026/11/25 21:11:17 INFO starting namespace=kube-system`, `I1125 21:11:17.1 1 x.go:1] fine`, `Error`} {
		if _, ok := ErrorLine(line); ok {
			t.Fatalf("%q taken for an error", line)
		}
	}
}

func TestPodStatus(t *testing.T) {
	now := time.Now()
	running := PodStatus(State{Phase: "running", Since: now}, "kube-vip", "img", "10.0.0.5")
	cs := running.ContainerStatuses[0]
	if running.Phase != corev1.PodRunning || !cs.Ready || cs.State.Running == nil || running.PodIP != "10.0.0.5" || cs.LastTerminationState.Terminated != nil {
		t.Fatalf("running: %+v", running)
	}
	crashed := PodStatus(State{Phase: "exited", Reason: "exit code 0", Restarts: 2, LastError: `checking interface err="eth9 is not valid interface"`, Since: now}, "kube-vip", "img", "10.0.0.5")
	cs = crashed.ContainerStatuses[0]
	last := cs.LastTerminationState.Terminated
	if cs.Ready || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount != 2 ||
		last == nil || last.Reason != "Completed" || last.ExitCode != 0 || !strings.Contains(last.Message, "eth9") {
		t.Fatalf("crashed: %+v", crashed)
	}
	if s := PodStatus(State{Phase: "waiting", Reason: "ContainerCreating", Since: now}, "kube-vip", "img", "10.0.0.5"); s.Phase != corev1.PodPending {
		t.Fatalf("not started yet: phase %s", s.Phase)
	}
}

func TestBuildPod(t *testing.T) {
	ds := chartDaemonSet(t)
	p := BuildPod(ds, "node-a")
	if p.Spec.NodeName != "node-a" || p.Name != PodName(ds, "node-a") || p.Namespace != ds.Namespace ||
		len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "DaemonSet" || !p.Spec.HostNetwork {
		t.Fatalf("pod: %+v", p)
	}
}
