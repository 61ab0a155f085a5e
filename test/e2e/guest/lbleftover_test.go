package guest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
	"github.com/harvester-kit/harvester-machine/bootstrap/gc"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// lbScene is a live guest cluster whose Services the cloud provider's
// service controller (the stand-in, by the real CCM's rules) serves.
type lbScene struct {
	t       *testing.T
	cluster string
	guest   kubernetes.Interface
	ccm     *simtest.CCM
	node    string
}

func (s *lbScene) createService(name string) *corev1.Service {
	s.t.Helper()
	ctx := testContext(s.t)
	svc, err := s.guest.CoreV1().Services("default").Create(ctx, simtest.LoadBalancerService("default", name, ""), metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return svc
}

// announce plays kube-vip: the vipHost annotation, then the ingress.
func (s *lbScene) announce(name string) string {
	s.t.Helper()
	ip, err := simtest.AnnounceAsKubeVIP(testContext(s.t), s.guest, "default", name, s.node)
	if err != nil {
		s.t.Fatal(err)
	}
	return ip
}

// lb says whether the LoadBalancer of svc exists on Harvester and its
// status.address.
func (s *lbScene) lb(ctx context.Context, svc *corev1.Service) (bool, string) {
	s.t.Helper()
	l, _, err := s.ccm.GetLoadBalancer(ctx, svc)
	if err != nil {
		s.t.Fatal(err)
	}
	if l == nil {
		return false, ""
	}
	return true, l.Status.Address
}

// waitServiceGone waits until the Service is deleted (its finalizer
// dropped by the service controller).
func (s *lbScene) waitServiceGone(name string, uid types.UID) {
	s.t.Helper()
	poll(s.t, "Service default/"+name+" gone", func(ctx context.Context) (bool, string) {
		cur, err := s.guest.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && cur.UID != uid) {
			return true, ""
		}
		return false, "still there: " + errString(err)
	})
}

// TestLoadBalancerLeftoverAndGC reproduces, through the cloud provider's
// rules, the LoadBalancers Harvester keeps after their Service goes
// (harvester#1460, #11345): kube-vip writes its vipHost annotation before
// the ingress, so the last sync never copies the ingress into
// status.address, and the delete is skipped. doctor says so before and
// after; gc --guest-kubeconfig lists exactly the leftovers (a deleted
// Service, a re-created one, one turned NodePort), --delete removes them
// and their addresses go back to the pool, and nothing of another cluster
// or without the cloud provider's labels is touched. A Service whose
// status.address was set (a sync after the ingress) is deleted cleanly.
func TestLoadBalancerLeftoverAndGC(t *testing.T) {
	const cluster, other = "lbleft", "lbother"
	createPoolFor(t, cluster+"-lb", cluster, "10.235.0.0/24")
	createPoolFor(t, other+"-lb", other, "10.236.0.0/24")
	_, machines := createPool(t, cluster, 1, "--harvester-cloud-provider=k3s")
	guest, _ := guestClients(t, cluster)
	checkNodesJoined(t, guest, machines)
	// The cloud provider initialises the node (kube-vip does not tolerate
	// its uninitialized taint).
	if _, err := simtest.CCMInitNodes(testContext(t), guest, env.dyn, vmNamespace); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(env.sim.Dir, "guests", cluster, "kubeconfig")
	guestKC := "--guest-kubeconfig=" + kubeconfig
	ctx := testContext(t)

	hv, namespace := harvesterAs(t, guestCloudConfig(t, guest))
	s := &lbScene{t: t, cluster: cluster, guest: guest, ccm: &simtest.CCM{Harvester: hv, Namespace: namespace, Cluster: cluster}, node: machines[0]}
	ccmCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	// The controller reports only while the test runs.
	sc := &simtest.ServiceController{CCM: s.ccm, Guest: guest,
		Log: func(format string, a ...any) {
			if ccmCtx.Err() == nil {
				t.Logf(format, a...)
			}
		},
		OnError: func(err error) {
			if ccmCtx.Err() == nil {
				t.Errorf("service controller: %v", err)
			}
		}}
	if err := sc.Run(ccmCtx); err != nil {
		t.Fatal(err)
	}

	// Another cluster's LoadBalancer (its Service unknown to this guest) and
	// one of this cluster without the cloud provider's service labels.
	otherCCM := &simtest.CCM{Harvester: env.dyn, Namespace: vmNamespace, Cluster: other}
	otherLB, err := otherCCM.EnsureLoadBalancer(ctx, simtest.LoadBalancerService("default", "web", "uid-other"))
	if err != nil {
		t.Fatal(err)
	}
	bare := simtest.CCMLoadBalancer(cluster, vmNamespace, "default", "bare", "uid-bare")
	delete(bare.Labels, harvester.LabelLBServiceName)
	createLBNoWait(t, bare)
	t.Cleanup(func() {
		for _, n := range []string{otherLB.Name, bare.Name} {
			_ = simtest.DeleteLoadBalancer(context.Background(), env.dyn, vmNamespace, n)
		}
	})

	// web: the leftover as the real cloud provider leaves it.
	web := s.createService("web")
	webIP := s.announce("web")
	if exists, addr := s.lb(ctx, web); !exists || addr != "" {
		t.Fatalf("LoadBalancer of web: exists %v, status.address %q; want it there without status.address (the last sync came before the ingress)", exists, addr)
	}
	// The node files' manifest is applied object by object; kube-vip's
	// DaemonSet comes after the cloud-config Secret waited for above.
	waitRow(t, cluster, doctor.CheckKubeVIP, doctor.OK, guestKC)
	r := waitRow(t, cluster, doctor.CheckLBAnnounced, doctor.Warn, guestKC)
	if row := r.row(t, doctor.CheckLBAnnounced); !strings.Contains(row.Seen, doctor.NoStatusAddress) || !strings.Contains(row.Seen, doctor.NoEndpoints) {
		t.Errorf("%s: %+v", doctor.CheckLBAnnounced, row)
	}
	if row := r.row(t, doctor.CheckKubeVIP); row.Status != doctor.OK || !strings.Contains(row.Seen, "vip_nodename from spec.nodeName") ||
		!strings.Contains(row.Seen, "runs on 1 of 1 nodes") {
		t.Errorf("kube-vip as the driver's node files deploy it: %+v", row)
	}

	// ok: a later change of an annotation syncs again, status.address is
	// set, and the Service's deletion deletes the LoadBalancer.
	okSvc := s.createService("ok")
	s.announce("ok")
	resync(t, guest, "ok")
	poll(t, "status.address of ok's LoadBalancer", func(ctx context.Context) (bool, string) {
		_, addr := s.lb(ctx, okSvc)
		return addr != "", "status.address " + addr
	})
	// The guest runs no pods: this is the EndpointSlice the endpointslice
	// controller would make for one ready pod of ok. ok is then announced
	// in every respect, and doctor lists only web.
	readyEndpoint(t, guest, "ok")
	poll(t, "doctor no longer lists ok", func(ctx context.Context) (bool, string) {
		row := runDoctor(t, ctx, cluster, guestKC).row(t, doctor.CheckLBAnnounced)
		return !strings.Contains(row.Seen, "default/ok") && strings.Contains(row.Seen, "default/web"), row.Seen
	})

	// long: a live Service whose prefix "lbleft-default-<name>-" has 57
	// characters; the cloud provider hashes the whole prefix and cuts it
	// after (issue 33: gc took its LoadBalancer for a re-created Service's
	// and deleted it).
	long := s.createService(longService)
	s.announce(longService)
	if n := len(cluster + "-default-" + longService + "-"); n <= 55 {
		t.Fatalf("the prefix has %d characters; the test needs more than 55", n)
	}

	// api is re-created (new UID); np turns NodePort.
	api := s.createService("api")
	s.announce("api")
	np := s.createService("np")
	s.announce("np")
	for _, svc := range []*corev1.Service{web, okSvc, api} {
		if err := guest.CoreV1().Services("default").Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		s.waitServiceGone(svc.Name, svc.UID)
	}
	if exists, _ := s.lb(ctx, okSvc); exists {
		t.Error("the LoadBalancer of ok (status.address set) outlived its Service")
	}
	api2 := s.createService("api")
	s.announce("api")
	cur, err := guest.CoreV1().Services("default").Get(ctx, "np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Type = corev1.ServiceTypeNodePort
	if _, err := guest.CoreV1().Services("default").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "np's finalizer dropped", func(ctx context.Context) (bool, string) {
		cur, err := guest.CoreV1().Services("default").Get(ctx, "np", metav1.GetOptions{})
		return err == nil && len(cur.Finalizers) == 0, errString(err)
	})

	want := []string{
		"LoadBalancer " + vmNamespace + "/" + s.ccm.Name(api),
		"LoadBalancer " + vmNamespace + "/" + s.ccm.Name(np),
		"LoadBalancer " + vmNamespace + "/" + s.ccm.Name(web),
	}
	sort.Strings(want)
	r = waitRow(t, cluster, doctor.CheckLBLeftovers, doctor.Warn, guestKC)
	if row := r.row(t, doctor.CheckLBLeftovers); !strings.HasPrefix(row.Seen, "3 holding pool addresses") ||
		!strings.Contains(row.Fix, "harvester-bootstrap gc --cluster-name "+cluster+" --namespace "+vmNamespace+" --guest-kubeconfig "+kubeconfig+" --delete") {
		t.Errorf("%s: %+v", doctor.CheckLBLeftovers, row)
	}
	if got := resultRefs(runGC(t, cluster, guestKC)); !slices.Equal(got, want) {
		t.Fatalf("gc --guest-kubeconfig (dry run) = %q, want exactly %q", got, want)
	}
	results := runGC(t, cluster, guestKC, "--delete")
	for _, res := range results {
		if res.Outcome != gc.Deleted {
			t.Errorf("%s: %q %q, want deleted", res.Ref(), res.Outcome, res.Error)
		}
	}
	if got := resultRefs(results); !slices.Equal(got, want) {
		t.Fatalf("gc --delete = %q, want exactly %q", got, want)
	}
	// Harvester releases each address, then the LoadBalancer goes.
	for _, svc := range []*corev1.Service{web, api, np} {
		if err := simtest.WaitObject(ctx, env.dyn, simtestLBGVR, vmNamespace, s.ccm.Name(svc), simtest.Gone); err != nil {
			t.Errorf("LoadBalancer %s after gc --delete: %v", s.ccm.Name(svc), err)
		}
	}
	// Left allocated: api2's, long's and the unlabelled LoadBalancer's addresses.
	poll(t, "the leftovers' addresses back in the pool", func(ctx context.Context) (bool, string) {
		p := getPool(t, ctx, cluster+"-lb")
		_, held := p.Status.Allocated[webIP]
		return !held && len(p.Status.Allocated) == 3, "allocated " + strings.Join(mapKeys(p.Status.Allocated), ",")
	})
	if exists, _ := s.lb(ctx, api2); !exists {
		t.Error("gc deleted the current Service's LoadBalancer")
	}
	if exists, _ := s.lb(ctx, long); !exists {
		t.Errorf("gc --delete deleted LoadBalancer %s of the live Service default/%s", s.ccm.Name(long), longService)
	}
	for _, n := range []string{otherLB.Name, bare.Name} {
		if _, err := env.dyn.Resource(simtestLBGVR).Namespace(vmNamespace).Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("LoadBalancer %s (another cluster's, or without the service labels) touched: %v", n, err)
		}
	}
	if got := runGC(t, cluster, guestKC); len(got) != 0 {
		t.Errorf("gc after --delete lists %q, want nothing", resultRefs(got))
	}
	waitRow(t, cluster, doctor.CheckLBLeftovers, doctor.OK, guestKC)
	t.Cleanup(func() {
		for _, svc := range []*corev1.Service{api2, long} {
			_ = simtest.DeleteLoadBalancer(context.Background(), env.dyn, vmNamespace, s.ccm.Name(svc))
		}
	})

	// Without the guest's Services gc refuses, naming why, and deletes nothing.
	out, err := gcWithGuestKubeconfig(t, cluster, badGuestKubeconfig(t, kubeconfig))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(out, "--guest-kubeconfig") || !strings.Contains(out, "could not be listed") {
		t.Errorf("gc with a rejected guest credential: %v\n%s", err, out)
	}
	if exists, _ := s.lb(ctx, api2); !exists {
		t.Error("gc refusing deleted the current Service's LoadBalancer")
	}

	// This guest given as another cluster's (issue 33, item 8): its nodes
	// run on VMs of cluster lbleft, so gc refuses and other's LoadBalancer
	// (whose Service default/web this guest does not list) stays.
	out, err = gcWithGuestKubeconfig(t, other, kubeconfig)
	if !errors.As(err, &ee) || !strings.Contains(out, "cannot be shown to be the named cluster "+other) ||
		!strings.Contains(out, "not labelled for cluster "+other) {
		t.Errorf("gc --cluster-name %s with %s's guest: %v\n%s", other, cluster, err, out)
	}
	if _, err := env.dyn.Resource(simtestLBGVR).Namespace(vmNamespace).Get(ctx, otherLB.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("gc with another cluster's guest touched LoadBalancer %s: %v", otherLB.Name, err)
	}
}

// longService is a Service name that makes the cloud provider's name
// prefix longer than 55 characters (issue 33's report).
const longService = "frontend-web-application-public-https-api"

// readyEndpoint creates the EndpointSlice of Service default/name with one
// ready endpoint.
func readyEndpoint(t *testing.T, guest kubernetes.Interface, name string) {
	t.Helper()
	ready := true
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-pod", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	if _, err := guest.DiscoveryV1().EndpointSlices("default").Create(testContext(t), es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// resync changes an annotation of the Service (what doctor advises): the
// cloud provider syncs again.
func resync(t *testing.T, guest kubernetes.Interface, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"harvester-bootstrap/resync":"1"}}}`)
	if _, err := guest.CoreV1().Services("default").Patch(testContext(t), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// badGuestKubeconfig is the guest's kubeconfig with a token the guest
// rejects instead of its credential.
func badGuestKubeconfig(t *testing.T, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.ClientCertificate, a.ClientKey = nil, nil, "", ""
		a.Token = "not-a-token"
	}
	p := filepath.Join(t.TempDir(), "bad-guest.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// gcWithGuestKubeconfig runs gc --delete with --guest-kubeconfig and
// returns its combined output and error.
func gcWithGuestKubeconfig(t *testing.T, cluster, kubeconfig string) (string, error) {
	t.Helper()
	bin, err := simtest.Bin("harvester-bootstrap")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(testContext(t), bin, "gc", "--cluster-name", cluster, "--namespace", vmNamespace,
		"--kubeconfig", env.sim.Kubeconfig, "--guest-kubeconfig", kubeconfig, "--delete").CombinedOutput()
	return string(out), err
}
