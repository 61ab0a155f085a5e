package guest

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/sim/kubevip"
	"github.com/harvester-kit/harvester-machine/sim/podenv"
	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// Annotations kube-vip reads (the cloud provider's address) and writes
// (the node announcing it) on a Service.
const (
	annLoadBalancerIPs = addons.KubeVIPAddressAnnotation
	annVIPHost         = simtest.AnnotationKubeVIPHost
)

// kubeVIPCluster starts a guest cluster of n VMs whose cloud-init is
// `harvester-bootstrap addon k3s` (kube-vip's DaemonSet among the add-ons),
// initialises its nodes as the cloud provider would (kube-vip does not
// tolerate the uninitialized taint) and waits until the real kube-vip runs
// on every node. It returns the guest client and the cluster's directory.
func kubeVIPCluster(t testing.TB, cluster string, n int) (kubernetes.Interface, string) {
	t.Helper()
	harness.NeedGuests(t)
	userData := k3sNodeUserData(t, cluster)
	if !strings.HasPrefix(userData, "#cloud-config\n") || strings.Contains(userData, "\npackages:") {
		t.Fatalf("harvester-bootstrap addon k3s --format cloud-init is not a #cloud-config without packages:\n%s", userData)
	}
	userData += "packages:\n  - qemu-guest-agent\n" // the VM reports its address
	ctx := testContext(t)
	// In a Secret, as the driver puts it: KubeVirt's VM admitter refuses
	// inline user data over 2048 bytes (validateVolumes in
	// pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go),
	// and the K3s node's user data is larger.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-userdata", Namespace: vmNamespace},
		StringData: map[string]string{"userdata": userData}}
	if _, err := env.kube.CoreV1().Secrets(vmNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.kube.CoreV1().Secrets(vmNamespace).Delete(context.Background(), secret.Name, metav1.DeleteOptions{})
	})
	vms := env.dyn.Resource(gvrVM).Namespace(vmNamespace)
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", cluster, i)
		names = append(names, name)
		cloudInit := map[string]any{"secretRef": map[string]any{"name": secret.Name}}
		if _, err := vms.Create(ctx, guestVMWith(name, cluster, cloudInit), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleteVMAtEnd(t, name)
	}
	guest, _ := guestClients(t, cluster)
	checkNodesJoined(t, guest, names)
	if _, err := simtest.CCMInitNodes(ctx, guest, env.dyn, vmNamespace); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.sim.Dir, "guests", cluster)
	poll(t, "kube-vip running on every node", func(context.Context) (bool, string) {
		states := kubevip.ReadStates(dir)
		running := 0
		for _, s := range states {
			if s.Phase == "running" {
				running++
			}
		}
		return running == n, fmt.Sprintf("%+v", states)
	})
	return guest, dir
}

// nodeAddrs is what `ip -br addr show eth0` shows in the node's network
// namespace (that of its kube-vip process).
func nodeAddrs(t testing.TB, dir, node string) []netip.Prefix {
	t.Helper()
	for _, s := range kubevip.ReadStates(dir) {
		if s.Node == node && s.PID != 0 {
			addrs, err := kubevip.Addrs(s.PID, kubevip.NodeInterface)
			if err != nil {
				t.Fatal(err)
			}
			return addrs
		}
	}
	t.Fatalf("no kube-vip running on node %s", node)
	return nil
}

// announcedBy lists the nodes whose interface holds vip.
func announcedBy(t testing.TB, dir string, vip netip.Addr) []string {
	t.Helper()
	var out []string
	for _, s := range kubevip.ReadStates(dir) {
		if s.PID != 0 && slices.Contains(nodeAddrs(t, dir, s.Node), netip.PrefixFrom(vip, 32)) {
			out = append(out, s.Node)
		}
	}
	return out
}

// lbService is a LoadBalancer Service with the address the cloud provider
// writes (kube-vip.io/loadbalancerIPs).
func lbService(name, vip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{annLoadBalancerIPs: vip}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

// readyEndpointSlice is the EndpointSlice the endpointslice controller
// makes for a Service with one ready pod (on node). The guest runs no
// pods, so the test makes it.
func readyEndpointSlice(svc *corev1.Service, podIP, node string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-x7k2p", Namespace: svc.Namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{podIP}, NodeName: ptr.To(node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(80)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

// TestKubeVIPAnnouncesAndWithdraws runs the real kube-vip (bin/kube-vip)
// on a 2-node guest cluster: a Service with its address and a ready
// endpoint is announced on one node's interface (gratuitous ARP seen on
// the guest network) and gets its ingress from kube-vip; a Service without
// endpoints is not announced; deleting the Service withdraws the address.
// kube-vip's own errors (an interface that does not exist) reach the
// simulator's status.
func TestKubeVIPAnnouncesAndWithdraws(t *testing.T) {
	cluster := "kubevip"
	guest, dir := kubeVIPCluster(t, cluster, 2)
	ctx := testContext(t)
	svcs := guest.CoreV1().Services("default")

	// Created first: by the time the other is announced, kube-vip has seen it.
	idleVIP := netip.MustParseAddr("198.51.100.11")
	if _, err := svcs.Create(ctx, lbService("idle", idleVIP.String()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("198.51.100.10")
	svc, err := svcs.Create(ctx, lbService("web", vip.String()), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guest.DiscoveryV1().EndpointSlices("default").Create(ctx, readyEndpointSlice(svc, "10.42.0.7", cluster+"-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var host string
	poll(t, "web's address on a node's interface and in its ingress, written by kube-vip", func(ctx context.Context) (bool, string) {
		s, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		host = s.Annotations[annVIPHost]
		ingress := s.Status.LoadBalancer.Ingress
		on := announcedBy(t, dir, vip)
		return len(ingress) == 1 && ingress[0].IP == vip.String() && slices.Equal(on, []string{host}),
			fmt.Sprintf("ingress %v, vipHost %q, on the interface of %v", ingress, host, on)
	})
	poll(t, "a gratuitous ARP for web's address seen on the guest network", func(context.Context) (bool, string) {
		for _, s := range kubevip.ReadStates(dir) {
			if s.Node == host && s.GratuitousARPs[vip.String()] > 0 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", kubevip.ReadStates(dir))
	})
	idle, err := svcs.Get(ctx, "idle", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if on := announcedBy(t, dir, idleVIP); len(on) > 0 || len(idle.Status.LoadBalancer.Ingress) > 0 {
		t.Fatalf("a Service without endpoints is announced by %v, ingress %v (kube-vip needs endpoints)", on, idle.Status.LoadBalancer.Ingress)
	}
	checkKubeVIPProcess(t, dir, host)
	checkKubeVIPPods(t, guest, 2)

	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "web's address withdrawn from every node", func(context.Context) (bool, string) {
		on := announcedBy(t, dir, vip)
		return len(on) == 0, fmt.Sprintf("still on %v", on)
	})

	checkKubeVIPRBACInStatus(t, guest, dir)
	checkKubeVIPErrorInStatus(t, guest, dir, cluster)
}

// checkKubeVIPPods: each node's kube-vip has its daemon pod in the guest,
// bound to the node, Running and Ready, as the kubelet reports it.
func checkKubeVIPPods(t *testing.T, guest kubernetes.Interface, n int) {
	t.Helper()
	poll(t, fmt.Sprintf("%d kube-vip pods Running and Ready", n), func(ctx context.Context) (bool, string) {
		pods, err := guest.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		var seen []string
		for _, p := range pods.Items {
			owned := len(p.OwnerReferences) == 1 && p.OwnerReferences[0].Name == kubevip.DaemonSetName
			if owned && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
				ready++
			}
			seen = append(seen, p.Name+" on "+p.Spec.NodeName+" "+string(p.Status.Phase))
		}
		return ready == n, strings.Join(seen, ", ")
	})
}

// checkKubeVIPRBACInStatus: without its ClusterRoleBinding, kube-vip's
// requests are refused by the guest's RBAC (it runs with its
// ServiceAccount's token), and the refusal is in its state.
func checkKubeVIPRBACInStatus(t *testing.T, guest kubernetes.Interface, dir string) {
	t.Helper()
	ctx := testContext(t)
	if err := guest.RbacV1().ClusterRoleBindings().Delete(ctx, kubevip.DaemonSetName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "kube-vip's requests refused (forbidden) in its state", func(context.Context) (bool, string) {
		for _, s := range kubevip.ReadStates(dir) {
			if strings.Contains(s.LastError, "forbidden") && strings.Contains(s.LastError, "system:serviceaccount:kube-system:kube-vip") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", kubevip.ReadStates(dir))
	})
}

// checkKubeVIPProcess: kube-vip runs with the node's hostname, with only
// NET_ADMIN and NET_RAW, and with its ServiceAccount's files where a pod
// has them.
func checkKubeVIPProcess(t *testing.T, dir, node string) {
	t.Helper()
	for _, s := range kubevip.ReadStates(dir) {
		if s.Node != node {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID))
		if err != nil {
			t.Fatal(err)
		}
		const netAdminNetRaw = "0000000000003000" // bits 12 and 13
		for _, field := range []string{"CapEff", "CapPrm", "CapBnd"} {
			if !strings.Contains(string(status), field+":\t"+netAdminNetRaw+"\n") {
				t.Errorf("kube-vip on %s: %s is not NET_ADMIN+NET_RAW only:\n%s", node, field, status)
			}
		}
		// /var/run is a symbolic link to /run, resolved here: through
		// /proc/PID/root an absolute link would lead back to this root.
		run, err := filepath.EvalSymlinks("/var/run")
		if err != nil {
			t.Fatal(err)
		}
		token, err := os.ReadFile(fmt.Sprintf("/proc/%d/root%s%s/token", s.PID, run, strings.TrimPrefix(podenv.ServiceAccountDir, "/var/run")))
		if err != nil || len(token) == 0 {
			t.Errorf("kube-vip on %s has no ServiceAccount token at %s: %v", node, podenv.ServiceAccountDir, err)
		}
		return
	}
	t.Fatalf("no kube-vip state for node %s", node)
}

// checkKubeVIPErrorInStatus: a DaemonSet naming an interface the node does
// not have makes kube-vip fail; its error is in the node's kube-vip state
// in `harvester-sim status`, on its daemon pod and in doctor's kube-vip row.
func checkKubeVIPErrorInStatus(t *testing.T, guest kubernetes.Interface, dir, cluster string) {
	t.Helper()
	ctx := testContext(t)
	dss := guest.AppsV1().DaemonSets(metav1.NamespaceSystem)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := dss.Get(ctx, kubevip.DaemonSetName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		env := ds.Spec.Template.Spec.Containers[0].Env
		for i := range env {
			if env[i].Name == "vip_interface" {
				env[i].Value = "eth9"
			}
		}
		_, err = dss.Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set kube-vip's vip_interface to eth9: %v", err)
	}
	const want = "eth9 is not valid interface"
	poll(t, "kube-vip's error about eth9 in its state", func(context.Context) (bool, string) {
		for _, s := range kubevip.ReadStates(dir) {
			if strings.Contains(s.LastError, want) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", kubevip.ReadStates(dir))
	})
	if out := simStatus(t); !strings.Contains(out, want) {
		t.Fatalf("harvester-sim status does not show kube-vip's error %q:\n%s", want, out)
	}
	poll(t, "a kube-vip pod in CrashLoopBackOff with the error as its last termination's message", func(ctx context.Context) (bool, string) {
		pods, err := guest.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				last := cs.LastTerminationState.Terminated
				if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" && last != nil && strings.Contains(last.Message, want) {
					return true, ""
				}
				seen = append(seen, fmt.Sprintf("%s: %+v", p.Name, cs))
			}
		}
		return false, strings.Join(seen, "; ")
	})
	// Between two restarts the pod is briefly Running: wait for a look at
	// it in CrashLoopBackOff.
	waitRowWhere(t, cluster, doctor.CheckKubeVIP, "Fail with CrashLoopBackOff and "+want, func(row doctor.Row) bool {
		return row.Status == doctor.Fail && strings.Contains(row.Seen, "CrashLoopBackOff: ") && strings.Contains(row.Seen, want)
	}, "--guest-kubeconfig="+filepath.Join(dir, "kubeconfig"))
}
