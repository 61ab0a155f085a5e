package guest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
	"github.com/harvester-kit/harvester-machine/sim/guests"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

const (
	vmNamespace = "default"
	waitTimeout = 2 * time.Minute
)

var (
	gvrVM   = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	gvrVMI  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	gvrPool = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "ippools"}
)

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// poll retries cond every 100ms until it holds, failing with what it says last.
func poll(t testing.TB, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	pollEvery(t, 100*time.Millisecond, what, cond)
}

// pollEvery is poll with another interval.
func pollEvery(t testing.TB, interval time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	ctx := testContext(t)
	last := ""
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		ok, why := cond(ctx)
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}

// deleteVMAtEnd deletes the VM name when the test ends and waits until
// it is gone, so that no later test of the package meets it (doctor's
// namespace-shared row, an upgrade's report).
func deleteVMAtEnd(t testing.TB, name string) {
	t.Helper()
	t.Cleanup(func() {
		vms := env.dyn.Resource(gvrVM).Namespace(vmNamespace)
		if err := vms.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete VM %s: %v", name, err)
			return
		}
		poll(t, "VM "+name+" gone", func(ctx context.Context) (bool, string) {
			_, err := vms.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), errString(err)
		})
	})
}

// bootstrap runs bin/harvester-bootstrap against the simulator.
func bootstrap(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := simtest.Bin("harvester-bootstrap")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(testContext(t), bin, append(args, "--kubeconfig", env.sim.Kubeconfig)...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("harvester-bootstrap %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// k3sNodeUserData is the K3s node cloud-init users generate today: the
// guest credential and add-ons as write_files for K3s's manifests folder.
func k3sNodeUserData(t testing.TB, cluster string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "k3s-cloud-init.yaml")
	bootstrap(t, "addon", "k3s", "--cluster-name", cluster, "--namespace", vmNamespace, "--format", "cloud-init", "-o", out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// createPool creates n machines of pool1 through rancher-machine with the
// driver's flags plus extra; they are removed after the test.
func createPool(t *testing.T, cluster string, n int, extra ...string) (*simtest.Machines, []string) {
	t.Helper()
	m, err := env.sim.NewMachines(t.TempDir(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	flags := append([]string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-ssh-user=ubuntu", "--harvester-wait-timeout=120"}, extra...)
	names := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range names {
		names[i] = fmt.Sprintf("%s-pool1-%d", cluster, i)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = m.Create(testContext(t), names[i], flags...)
		}(i)
	}
	wg.Wait()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_, _ = m.Remove(ctx, names...)
		simtest.NoPluginLeft(t, m.Store)
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %s: %v", names[i], err)
		}
	}
	return m, names
}

// guestClients connects to the guest cluster's API server once the
// simulator has written its kubeconfig (0600).
func guestClients(t testing.TB, cluster string) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	path := filepath.Join(env.sim.Dir, "guests", cluster, "kubeconfig")
	poll(t, "the guest kubeconfig "+path, func(context.Context) (bool, string) {
		info, err := os.Stat(path)
		if err != nil {
			return false, err.Error()
		}
		return info.Mode().Perm() == 0o600, "mode " + info.Mode().String()
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube, dyn
}

func vmiIP(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	u, err := env.dyn.Resource(gvrVMI).Namespace(vmNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return guests.RunningIP(u)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkNodesJoined waits until every machine is a Ready Node of the guest
// cluster, registered as kubelet with the external cloud provider does
// (the uninitialized taint until the cloud provider sets the providerID).
func checkNodesJoined(t testing.TB, guest kubernetes.Interface, machines []string) {
	t.Helper()
	poll(t, fmt.Sprintf("%d Ready nodes", len(machines)), func(ctx context.Context) (bool, string) {
		nodes, err := guest.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) {
				ready++
			}
		}
		return ready == len(machines), fmt.Sprintf("%d of %d nodes ready", ready, len(nodes.Items))
	})
	ctx := testContext(t)
	for _, name := range machines {
		n, err := guest.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("node %s: %v", name, err)
		}
		ip := vmiIP(t, ctx, name)
		if n.Spec.ProviderID == "" && !slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool {
			return tn.Key == harvester.TaintUninitialized && tn.Value == "true" && tn.Effect == corev1.TaintEffectNoSchedule
		}) {
			t.Errorf("node %s taints = %v, want %s=true:NoSchedule until the cloud provider initialises it", name, n.Spec.Taints, harvester.TaintUninitialized)
		}
		if n.Annotations[harvester.AnnProvidedNodeIP] != ip || ip == "" {
			t.Errorf("node %s provided-node-ip = %q, want the VM's address %q", name, n.Annotations[harvester.AnnProvidedNodeIP], ip)
		}
		if !slices.Contains(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}) {
			t.Errorf("node %s addresses = %v, want InternalIP %s", name, n.Status.Addresses, ip)
		}
		for _, l := range []string{guests.LabelHostname, guests.LabelOS, guests.LabelArch, guests.LabelBetaOS, guests.LabelBetaArch} {
			if n.Labels[l] == "" {
				t.Errorf("node %s lacks label %s: %v", name, l, n.Labels)
			}
		}
	}
}

// checkAddons waits for the add-ons the nodes' K3s manifests hold: the
// CCM Deployment with --cluster-name, the CSI driver and the cloud-config
// Secret, with the files recorded as Addons sourced from K3s's manifests
// folder. It returns the Secret's kubeconfig for Harvester.
func checkAddons(t *testing.T, guest kubernetes.Interface, guestDyn dynamic.Interface, cluster string) []byte {
	t.Helper()
	poll(t, "an Addon from "+guests.ManifestDirs[0]+", the CCM Deployment and the rest of the add-ons", func(ctx context.Context) (bool, string) {
		list, err := guestDyn.Resource(guests.AddonGVR).Namespace(guests.AddonNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		found := false
		for _, a := range list.Items {
			src, _, _ := unstructured.NestedString(a.Object, "spec", "source")
			found = found || strings.HasPrefix(src, guests.ManifestDirs[0]+"/")
		}
		_, err = guest.AppsV1().Deployments(addons.DefaultNamespace).Get(ctx, addons.CCMName, metav1.GetOptions{})
		if err == nil {
			// The manifest's last object: everything before it is applied.
			_, err = guest.StorageV1().StorageClasses().Get(ctx, addons.StorageClass, metav1.GetOptions{})
		}
		return found && err == nil, fmt.Sprintf("%d Addons, CCM Deployment and StorageClass: %v", len(list.Items), err)
	})
	ctx := testContext(t)
	ns := addons.DefaultNamespace
	dep, err := guest.AppsV1().Deployments(ns).Get(ctx, addons.CCMName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CCM Deployment: %v", err)
	}
	if args := containerArgs(dep); !slices.Contains(args, "--cluster-name="+cluster) {
		t.Errorf("CCM args = %v, want --cluster-name=%s", args, cluster)
	}
	if _, err := guest.StorageV1().CSIDrivers().Get(ctx, addons.CSIDriverName, metav1.GetOptions{}); err != nil {
		t.Errorf("CSIDriver %s: %v", addons.CSIDriverName, err)
	}
	if _, err := guest.AppsV1().DaemonSets(ns).Get(ctx, addons.CSIName, metav1.GetOptions{}); err != nil {
		t.Errorf("CSI DaemonSet %s: %v", addons.CSIName, err)
	}
	checkKubeVIP(t, ctx, guest)
	secret, err := guest.CoreV1().Secrets(ns).Get(ctx, addons.DefaultCloudConfigSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("cloud-config Secret: %v", err)
	}
	cc := secret.Data[addons.CloudConfigKey]
	if len(cc) == 0 {
		t.Fatalf("cloud-config Secret has no %s key: %v", addons.CloudConfigKey, secret.Data)
	}
	return cc
}

// checkKubeVIP: kube-vip came with the cloud provider from the node files,
// as Harvester's chart deploys it (announcing Service addresses).
func checkKubeVIP(t *testing.T, ctx context.Context, guest kubernetes.Interface) {
	t.Helper()
	ns := addons.DefaultNamespace
	ds, err := guest.AppsV1().DaemonSets(ns).Get(ctx, addons.KubeVIPName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kube-vip DaemonSet: %v", err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	svcEnable, nodeName := "", ""
	for _, e := range c.Env {
		if e.Name == addons.KubeVIPEnvSvcEnable {
			svcEnable = e.Value
		}
		if e.Name == addons.KubeVIPEnvNodeName && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			nodeName = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if nodeName != addons.KubeVIPNodeNameField {
		t.Errorf("kube-vip DaemonSet from the node files: vip_nodename from %q, want %s", nodeName, addons.KubeVIPNodeNameField)
	}
	if !ds.Spec.Template.Spec.HostNetwork || svcEnable != "true" || !strings.Contains(c.Image, "kube-vip-iptables:"+addons.KubeVIPVersion) {
		t.Errorf("kube-vip DaemonSet: hostNetwork %v, svc_enable %q, image %s", ds.Spec.Template.Spec.HostNetwork, svcEnable, c.Image)
	}
	if _, err := guest.RbacV1().ClusterRoles().Get(ctx, addons.KubeVIPName, metav1.GetOptions{}); err != nil {
		t.Errorf("kube-vip ClusterRole: %v", err)
	}
	if _, err := guest.RbacV1().Roles(ns).Get(ctx, addons.KubeVIPName, metav1.GetOptions{}); err != nil {
		t.Errorf("kube-vip Role: %v", err)
	}
}

func containerArgs(dep *appsv1.Deployment) []string {
	var out []string
	for _, c := range dep.Spec.Template.Spec.Containers {
		out = append(out, c.Args...)
		out = append(out, c.Command...)
	}
	return out
}

// harvesterAs connects to the simulated Harvester with a cloud-config
// (kubeconfig) and returns the client and the namespace it uses.
// guestCloudConfig waits for the cloud-config Secret the guest's add-ons
// hold and returns its kubeconfig for Harvester.
func guestCloudConfig(t *testing.T, guest kubernetes.Interface) []byte {
	t.Helper()
	var cloudConfig []byte
	poll(t, "the guest's cloud-config Secret", func(ctx context.Context) (bool, string) {
		sec, err := guest.CoreV1().Secrets(addons.DefaultNamespace).Get(ctx, addons.DefaultCloudConfigSecret, metav1.GetOptions{})
		if err == nil {
			cloudConfig = sec.Data[addons.CloudConfigKey]
		}
		return err == nil, errString(err)
	})
	return cloudConfig
}

func harvesterAs(t *testing.T, cloudConfig []byte) (dynamic.Interface, string) {
	t.Helper()
	dyn, ns, err := simtest.CloudProviderClient(cloudConfig)
	if err != nil {
		t.Fatal(err)
	}
	return dyn, ns
}

// createPoolFor creates an IPPool scoped to one guest cluster (admin),
// deleted after the test.
func createPoolFor(t *testing.T, name, cluster, subnet string) {
	t.Helper()
	p := &lbapi.IPPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: lbapi.Group + "/" + lbapi.Version, Kind: "IPPool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: lbapi.IPPoolSpec{Ranges: []lbapi.Range{{Subnet: subnet}},
			Selector: lbapi.Selector{Scope: []lbapi.Scope{{Project: lbapi.All, Namespace: lbapi.All, GuestCluster: cluster}}}},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	if _, err := env.dyn.Resource(gvrPool).Create(testContext(t), &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create IPPool %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.dyn.Resource(gvrPool).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func getPool(t *testing.T, ctx context.Context, name string) *lbapi.IPPool {
	t.Helper()
	u, err := env.dyn.Resource(gvrPool).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var p lbapi.IPPool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// checkLoadBalancer plays the cloud provider with harvester (its
// cloud-config credential) by its rules: a first sync creates the
// LoadBalancer of a Service and takes its address, checked to come from
// wantPool and not from otherPool; a later sync, once kube-vip wrote the
// Service's ingress, copies it into status.address; only then does the
// Service's deletion delete the LoadBalancer, and the address goes back
// into the pool.
func checkLoadBalancer(t *testing.T, harvester dynamic.Interface, namespace, cluster, wantPool, otherPool string) {
	t.Helper()
	ctx := testContext(t)
	ccm := &simtest.CCM{Harvester: harvester, Namespace: namespace, Cluster: cluster}
	svc := simtest.LoadBalancerService("default", "web", "8d0cfd1c-31b7-4b13-9a33-1d3c2ff4b0a1")
	l, err := ccm.EnsureLoadBalancer(ctx, svc)
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Status.AllocatedAddress
	if addr.IPPool != wantPool {
		t.Fatalf("address %s came from pool %q, want the cluster's pool %s", addr.IP, addr.IPPool, wantPool)
	}
	owner := namespace + "/" + l.Name
	if p := getPool(t, ctx, wantPool); p.Status.Allocated[addr.IP] != owner {
		t.Fatalf("pool %s allocated = %v, want %s -> %s", wantPool, p.Status.Allocated, addr.IP, owner)
	}
	if p := getPool(t, ctx, otherPool); len(p.Status.Allocated) != 0 {
		t.Fatalf("the other cluster's pool %s handed out %v", otherPool, p.Status.Allocated)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr.IP}}
	if l, err = ccm.EnsureLoadBalancer(ctx, svc); err != nil || l.Status.Address != addr.IP {
		t.Fatalf("sync after the ingress: status.address %q, %v; want %s", l.Status.Address, err, addr.IP)
	}
	if deleted, err := ccm.CleanUp(ctx, svc); err != nil || !deleted {
		t.Fatalf("the Service's deletion deleted its LoadBalancer: %v, %v; want true", deleted, err)
	}
	poll(t, "the address back in the pool", func(ctx context.Context) (bool, string) {
		p := getPool(t, ctx, wantPool)
		return len(p.Status.Allocated) == 0 && p.Status.AllocatedHistory[addr.IP] == owner, fmt.Sprintf("pool status %+v", p.Status)
	})
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// simStatus runs `harvester-sim status`.
func simStatus(t *testing.T) string {
	t.Helper()
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(testContext(t), bin, "status", "--state-dir", env.sim.Dir).CombinedOutput()
	if err != nil {
		t.Fatalf("harvester-sim status: %v\n%s", err, out)
	}
	return string(out)
}
