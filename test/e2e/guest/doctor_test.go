package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// doctorReport is `doctor -o json`'s output.
type doctorReport struct {
	Failed bool         `json:"failed"`
	Checks []doctor.Row `json:"checks"`
	code   int
	raw    string // stdout and stderr, to look for secrets in
}

func (r doctorReport) row(t *testing.T, check string) doctor.Row {
	t.Helper()
	for _, row := range r.Checks {
		if row.Check == check {
			return row
		}
	}
	t.Fatalf("no %s row in %+v", check, r.Checks)
	return doctor.Row{}
}

// runDoctor runs `harvester-bootstrap doctor -o json` with args.
func runDoctor(t *testing.T, ctx context.Context, cluster string, args ...string) doctorReport {
	t.Helper()
	bin, err := simtest.Bin("harvester-bootstrap")
	if err != nil {
		t.Fatal(err)
	}
	args = append([]string{"doctor", "--cluster-name", cluster, "--namespace", vmNamespace, "-o", "json", "--kubeconfig", env.sim.Kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	r := doctorReport{}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		r.code = ee.ExitCode()
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("doctor %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), stderr.String())
	}
	if r.Failed != (r.code == 1) || (r.code != 0 && r.code != 1) {
		t.Fatalf("doctor exit %d with failed=%v\n%s", r.code, r.Failed, stderr.String())
	}
	r.raw = out.String() + stderr.String()
	return r
}

// waitRow runs doctor until check has status want.
func waitRow(t *testing.T, cluster, check string, want doctor.Status, args ...string) doctorReport {
	t.Helper()
	return waitRowWhere(t, cluster, check, string(want), func(row doctor.Row) bool { return row.Status == want }, args...)
}

// waitRowWhere runs doctor until check's row satisfies ok; what names
// the awaited state in a timeout. Once a second: each run is a process
// and about 18 requests.
func waitRowWhere(t *testing.T, cluster, check, what string, ok func(doctor.Row) bool, args ...string) doctorReport {
	t.Helper()
	var r doctorReport
	pollEvery(t, time.Second, check+" "+what, func(ctx context.Context) (bool, string) {
		r = runDoctor(t, ctx, cluster, args...)
		row := r.row(t, check)
		return ok(row), string(row.Status) + " " + row.Seen
	})
	return r
}

// setCreatorLabel removes (value "") or restores the creator label on a
// VM and its template.
func setCreatorLabel(t *testing.T, name, value string) {
	t.Helper()
	var v any
	if value != "" {
		v = value
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": map[string]any{harvester.LabelCreator: v}},
		"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{harvester.LabelCreator: v}}}},
	})
	if _, err := env.dyn.Resource(gvrVM).Namespace(vmNamespace).Patch(testContext(t), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createLBNoWait creates a LoadBalancer as the cloud provider does,
// without waiting for an address.
func createLBNoWait(t *testing.T, l *lbapi.LoadBalancer) {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	if _, err := env.dyn.Resource(simtestLBGVR).Namespace(l.Namespace).Create(testContext(t), &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

var simtestLBGVR = gvrPool.GroupVersion().WithResource("loadbalancers")

// writeSecretFile writes data 0600 into the test's directory.
func writeSecretFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func tokenOf(t *testing.T, kubeconfig []byte) string {
	t.Helper()
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range kc.AuthInfos {
		if u.Token != "" {
			return u.Token
		}
	}
	t.Fatal("kubeconfig without a token")
	return ""
}

// TestDoctor brings up a one-machine K3s cluster with the driver's cloud
// provider and checks that each doctor check fails when its cause is
// injected and passes once it is fixed, and that no secret is printed.
func TestDoctor(t *testing.T) {
	const cluster = "doc"
	createPoolFor(t, cluster+"-lb", cluster, "10.232.0.0/24")
	_, machines := createPool(t, cluster, 1, "--harvester-cloud-provider=k3s")
	guest, _ := guestClients(t, cluster)
	checkNodesJoined(t, guest, machines)
	guestKC := "--guest-kubeconfig=" + filepath.Join(env.sim.Dir, "guests", cluster, "kubeconfig")
	poll(t, "the add-ons (the CCM Deployment and kube-vip)", func(ctx context.Context) (bool, string) {
		_, err := guest.AppsV1().Deployments(addons.DefaultNamespace).Get(ctx, addons.CCMName, metav1.GetOptions{})
		if err == nil {
			_, err = guest.AppsV1().DaemonSets(addons.DefaultNamespace).Get(ctx, addons.KubeVIPName, metav1.GetOptions{})
		}
		return err == nil, "CCM Deployment, kube-vip DaemonSet: " + errString(err)
	})

	// Nodes the cloud provider has not initialised yet.
	r := runDoctor(t, testContext(t), cluster, guestKC)
	if row := r.row(t, doctor.CheckNodes); row.Status != doctor.Fail || !strings.Contains(row.Seen, harvester.TaintUninitialized) {
		t.Errorf("guest-nodes before the cloud provider ran: %+v", row)
	}
	if _, err := simtest.CCMInitNodes(testContext(t), guest, env.dyn, vmNamespace); err != nil {
		t.Fatal(err)
	}
	r = runDoctor(t, testContext(t), cluster, guestKC)
	for _, row := range r.Checks {
		if row.Status != doctor.OK {
			t.Errorf("healthy cluster: %s %s %q (fix %q)", row.Check, row.Status, row.Seen, row.Fix)
		}
	}
	if r.code != 0 || len(r.Checks) != 25 {
		t.Fatalf("healthy cluster: exit %d, %d rows", r.code, len(r.Checks))
	}

	t.Run("unlabelled VM", func(t *testing.T) {
		setCreatorLabel(t, machines[0], "")
		waitRow(t, cluster, doctor.CheckCreator, doctor.Fail)
		setCreatorLabel(t, machines[0], harvester.CreatorValue)
		waitRow(t, cluster, doctor.CheckCreator, doctor.OK)
	})

	t.Run("no guest agent", func(t *testing.T) {
		ctx := testContext(t)
		pattern := vmNamespace + "/" + machines[0]
		if err := fault.SetVM(ctx, env.kube, fault.NoIP, pattern, false); err != nil {
			t.Fatal(err)
		}
		waitRow(t, cluster, doctor.CheckGuestAgent, doctor.Fail)
		if err := fault.SetVM(ctx, env.kube, fault.NoIP, pattern, true); err != nil {
			t.Fatal(err)
		}
		waitRow(t, cluster, doctor.CheckGuestAgent, doctor.OK)
	})

	top := t // the LoadBalancer below is needed until the end of the test
	t.Run("wrong cluster name on a LoadBalancer", func(t *testing.T) {
		ctx := testContext(t)
		svc, err := guest.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wrong := simtest.CCMLoadBalancer(doctor.DefaultCCMCluster, vmNamespace, "default", "web", string(svc.UID))
		createLBNoWait(t, wrong)
		r := waitRow(t, cluster, doctor.CheckGuestServices, doctor.Fail, guestKC)
		if row := r.row(t, doctor.CheckGuestServices); !strings.Contains(row.Seen, `carries cluster "kubernetes"`) {
			t.Errorf("guest-loadbalancers: %+v", row)
		}
		if row := r.row(t, doctor.CheckLoadBalancers); row.Status != doctor.Warn {
			t.Errorf("loadbalancers with a LoadBalancer of the default cluster name: %+v", row)
		}
		if err := simtest.DeleteLoadBalancer(ctx, env.dyn, vmNamespace, wrong.Name); err != nil {
			t.Fatal(err)
		}
		ccm := &simtest.CCM{Harvester: env.dyn, Namespace: vmNamespace, Cluster: cluster}
		right, err := ccm.EnsureLoadBalancer(ctx, svc)
		if err != nil {
			t.Fatal(err)
		}
		top.Cleanup(func() {
			// The address goes back, so the test's pool can be deleted.
			if err := simtest.DeleteLoadBalancer(context.Background(), env.dyn, vmNamespace, right.Name); err != nil {
				t.Error(err)
			}
		})
		r = waitRow(t, cluster, doctor.CheckGuestServices, doctor.OK, guestKC)
		if row := r.row(t, doctor.CheckLoadBalancers); row.Status != doctor.OK || !strings.Contains(row.Seen, "10.232.0.") {
			t.Errorf("loadbalancers once fixed: %+v", row)
		}
	})

	t.Run("no kube-vip", func(t *testing.T) {
		// The LoadBalancer Service default/web has its address (above); without
		// kube-vip nothing in the guest announces it.
		ctx := testContext(t)
		dss := guest.AppsV1().DaemonSets(addons.DefaultNamespace)
		ds, err := dss.Get(ctx, addons.KubeVIPName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("kube-vip did not come with the driver's K3s add-ons: %v", err)
		}
		if r := runDoctor(t, ctx, cluster, guestKC); r.row(t, doctor.CheckKubeVIP).Status != doctor.OK {
			t.Errorf("kube-vip as deployed: %+v", r.row(t, doctor.CheckKubeVIP))
		}
		if err := dss.Delete(ctx, ds.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		r := waitRow(t, cluster, doctor.CheckKubeVIP, doctor.Fail, guestKC)
		if row := r.row(t, doctor.CheckKubeVIP); !strings.Contains(row.Seen, "nothing announces default/web 10.232.0.") || !strings.Contains(row.Fix, "harvester-bootstrap apply") || r.code != 1 {
			t.Errorf("kube-vip gone: exit %d, %+v", r.code, row)
		}
		// The fix doctor names: apply the add-ons (server-side) to the guest.
		secret, err := guest.CoreV1().Secrets(addons.DefaultNamespace).Get(ctx, addons.DefaultCloudConfigSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cc := writeSecretFile(t, "cloud-config", secret.Data[addons.CloudConfigKey])
		out := bootstrap(t, "apply", guestKC, "--cloud-config", cc, "--cluster-name", cluster)
		if !strings.Contains(out, "DaemonSet kube-system/kube-vip created") {
			t.Errorf("apply:\n%s", out)
		}
		waitRow(t, cluster, doctor.CheckKubeVIP, doctor.OK, guestKC)
	})

	t.Run("exhausted pool", func(t *testing.T) {
		ctx := testContext(t)
		if err := fault.SetExhaustPool(ctx, env.kube, env.dyn, cluster+"-lb", false); err != nil {
			t.Fatal(err)
		}
		r := waitRow(t, cluster, doctor.CheckIPPools, doctor.Fail)
		if row := r.row(t, doctor.CheckIPPools); !strings.Contains(row.Seen, cluster+"-lb 0 of") {
			t.Errorf("ip-pools: %+v", row)
		}
		if err := fault.SetExhaustPool(ctx, env.kube, env.dyn, cluster+"-lb", true); err != nil {
			t.Fatal(err)
		}
		waitRow(t, cluster, doctor.CheckIPPools, doctor.OK)
	})

	t.Run("revoked token", func(t *testing.T) {
		ctx := testContext(t)
		secret, err := guest.CoreV1().Secrets(addons.DefaultNamespace).Get(ctx, addons.DefaultCloudConfigSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old := secret.Data[addons.CloudConfigKey]
		oldFile := "--cloud-config=" + writeSecretFile(t, "old-cloud-config", old)
		r := waitRow(t, cluster, doctor.CheckCloudConfig, doctor.OK, oldFile)
		noSecret(t, r, tokenOf(t, old))
		fresh := bootstrap(t, "kubeconfig", "rotate", "--cluster-name", cluster, "--namespace", vmNamespace)
		r = waitRow(t, cluster, doctor.CheckCloudConfig, doctor.Fail, oldFile)
		if row := r.row(t, doctor.CheckCloudConfig); !strings.Contains(row.Seen, "401") {
			t.Errorf("cloud-config with the revoked token: %+v", row)
		}
		newFile := "--cloud-config=" + writeSecretFile(t, "new-cloud-config", []byte(fresh))
		r = waitRow(t, cluster, doctor.CheckCloudConfig, doctor.OK, newFile)
		noSecret(t, r, tokenOf(t, []byte(fresh)))
		if row := r.row(t, doctor.CheckToken); row.Status != doctor.OK {
			t.Errorf("credential-token after rotate: %+v", row)
		}
	})

	t.Run("expiring time-bound token", func(t *testing.T) {
		soon := bootstrap(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNamespace, "--ttl", "24h")
		r := runDoctor(t, testContext(t), cluster, "--cloud-config="+writeSecretFile(t, "soon", []byte(soon)))
		if row := r.row(t, doctor.CheckCloudConfig); row.Status != doctor.Warn || !strings.Contains(row.Seen, "under 7 days") {
			t.Errorf("cloud-config with a 24h token: %+v", row)
		}
		noSecret(t, r, tokenOf(t, []byte(soon)))
		later := bootstrap(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNamespace, "--ttl", "720h")
		r = runDoctor(t, testContext(t), cluster, "--cloud-config="+writeSecretFile(t, "later", []byte(later)))
		if row := r.row(t, doctor.CheckCloudConfig); row.Status != doctor.OK || !strings.Contains(row.Seen, "JWT") {
			t.Errorf("cloud-config with a 30-day token: %+v", row)
		}
	})
}

// noSecret fails when the doctor's output holds token.
func noSecret(t *testing.T, r doctorReport, token string) {
	t.Helper()
	if token == "" || strings.Contains(r.raw, token) {
		t.Errorf("doctor printed a token (or the test has none): %q", r.raw)
	}
}
