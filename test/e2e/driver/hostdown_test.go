package driver_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/staticip"
	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// The host-failure test's timing and policy: kube-controller-manager's
// grace period (tuned for the test), and a vm-force-reset-policy whose out-of-service step
// comes well after the first rm's --harvester-wait-timeout: the first rm,
// the replacement's create and the third machine's refusal must all fall
// before it, on a loaded machine too.
const (
	hdGrace       = 5 * time.Second
	hdWaitTimeout = 20 * time.Second
	hdPolicy      = `{"enable":true,"period":1,"vmMigrationTimeout":90}`
	hdRange       = "10.60.0.200-10.60.0.201/24" // two addresses: the dead machine's and its replacement's
)

// TestHostDownReplacement (issue 34): a machine whose host dies goes
// through Rancher's replacement, through the real rancher-machine, on the
// package's simulator with a short grace period; it runs alone (no
// t.Parallel), so the host failure touches no other test's machine. While Harvester's force-reset has not released the VM
// instance, rm fails within --harvester-wait-timeout naming the down
// host, and the machine is kept; the replacement machine of the pool is
// created at once on a healthy host with the other free address, and the
// dead machine's address stays taken (a third machine finds none) until
// its instance is gone; a retried rm completes once Harvester marked the
// host out of service; with the host back it is Ready and untainted.
func TestHostDownReplacement(t *testing.T) {
	harness.NeedGuests(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	simtest.HostFailures(ctx, t, kube, dynAdmin, hdGrace, hdPolicy)
	s, kc, vc := sim, kube, virt
	m, err := s.NewMachines(t.TempDir(), "e2e-hd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { simtest.NoPluginLeft(t, m.Store) })
	flags := append(staticFlags(hdRange), "--harvester-wait-timeout="+strings.TrimSuffix(hdWaitTimeout.String(), "s"))
	dead, repl, third := "e2e-hd-pool1-d0001", "e2e-hd-pool1-r0002", "e2e-hd-pool1-t0003"
	var host string
	t.Cleanup(func() { // a failed test leaves the simulator as it found it
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		if host != "" {
			_ = s.Fault(ctx, "host-down", "--remove", host)
		}
		for _, name := range []string{dead, repl, third} {
			_, _ = m.Remove(ctx, name)
		}
	})

	if out, err := m.Create(ctx, dead, flags...); err != nil {
		t.Fatalf("create %s: %v\n%s", dead, err, out)
	}
	vmi, err := vc.KubevirtV1().VirtualMachineInstances(namespace).Get(ctx, dead, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host = vmi.Status.NodeName
	addr := hostDownNIC0(vmi)
	t.Logf("%s runs on %s with %s", dead, host, addr)

	if err := s.Fault(ctx, "host-down", host); err != nil {
		t.Fatal(err)
	}
	if _, err := simtest.WaitNode(ctx, kc, host, func(n *corev1.Node) bool { return simtest.NodeReady(n) == corev1.ConditionUnknown }); err != nil {
		t.Fatal(err)
	}

	// Rancher's rm of the dead machine: fails within the timeout, naming the host.
	start := time.Now()
	out, err := m.Remove(ctx, dead)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("rm of a machine on a down host succeeded before the force reset:\n%s", out)
	}
	for _, want := range []string{
		"VM " + namespace + "/" + dead + " is still terminating on host " + host + ", which is NotReady since",
		"Ready Unknown", "vm-force-reset-policy", "kubevirt.io/drain", "the machine is kept",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rm output lacks %q:\n%s", want, out)
		}
	}
	if took > hdWaitTimeout+15*time.Second { // the rancher-machine and plugin start-up besides the driver's wait
		t.Errorf("rm took %s with --harvester-wait-timeout %s", took.Round(time.Second), hdWaitTimeout)
	}
	if _, err := os.Stat(filepath.Join(m.Store, "machines", dead)); err != nil {
		t.Errorf("the failed rm forgot the machine: %v", err)
	}
	t.Logf("first rm failed after %s:\n%s", took.Round(100*time.Millisecond), lastLines(out, 3))

	// The replacement: at once, on a healthy host, with the other address.
	if out, err := m.Create(ctx, repl, flags...); err != nil {
		t.Fatalf("create the replacement %s: %v\n%s", repl, err, out)
	}
	rv, err := vc.KubevirtV1().VirtualMachineInstances(namespace).Get(ctx, repl, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv.Status.NodeName == host || hostDownNIC0(rv) == addr {
		t.Errorf("replacement on %s with %s; the dead machine was on %s with %s", rv.Status.NodeName, hostDownNIC0(rv), host, addr)
	}
	// The dead machine's address is still taken: KubeVirt keeps its VM,
	// Terminating, until the instance is gone, and with it the claim the
	// VM owns.
	if old, err := vc.KubevirtV1().VirtualMachineInstances(namespace).Get(ctx, dead, metav1.GetOptions{}); err != nil || old.DeletionTimestamp == nil {
		t.Fatalf("the dead machine's instance should be terminating: %v", err)
	}
	if vm, err := vc.KubevirtV1().VirtualMachines(namespace).Get(ctx, dead, metav1.GetOptions{}); err != nil || vm.DeletionTimestamp == nil {
		t.Fatalf("the dead machine's VM should be terminating while its instance is: %v", err)
	}
	out, err = m.Create(ctx, third, flags...)
	if err == nil || !regexp.MustCompile(regexp.QuoteMeta(addr)+` held by machine `+dead).MatchString(out) {
		t.Errorf("a third machine while the dead instance holds %s: %v\n%s", addr, err, out)
	}
	if out, err := m.Remove(ctx, third); err != nil {
		t.Errorf("rm of the refused machine: %v\n%s", err, out)
	}

	// Rancher retries rm; one completes once the host is out of service.
	var done bool
	for attempt := 1; !done && ctx.Err() == nil; attempt++ {
		out, err := m.Remove(ctx, dead)
		switch {
		case err == nil:
			done = true
			t.Logf("rm attempt %d completed, %s after host-down", attempt, time.Since(start).Round(time.Second))
		case !strings.Contains(out, "is still terminating on host "+host) &&
			!strings.Contains(out, "waiting for VM "+namespace+"/"+dead+" to be deleted"):
			// The second: the instance is gone and virt-controller has yet
			// to drop its finalizer from the VM (slow on a busy machine);
			// Rancher retries that rm too.
			t.Fatalf("rm attempt %d failed otherwise:\n%s", attempt, out)
		}
	}
	if !done {
		t.Fatal("rm never completed")
	}
	n, err := kc.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
	if err != nil || !simtest.HasTaint(n, corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute) {
		t.Errorf("rm completed before Harvester marked %s out of service: %v %v", host, n.Spec.Taints, err)
	}
	if _, err := vc.KubevirtV1().VirtualMachineInstances(namespace).Get(ctx, dead, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("rm completed with the instance still there: %v", err)
	}
	claims, err := kc.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: staticip.LabelClaim})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(claims.Items, func(cm corev1.ConfigMap) bool { return strings.HasSuffix(cm.Name, strings.ReplaceAll(addr, ".", "-")) }) {
		t.Errorf("the dead machine's claim of %s is still there", addr)
	}

	if err := s.Fault(ctx, "host-down", "--remove", host); err != nil {
		t.Fatal(err)
	}
	if _, err := simtest.WaitNode(ctx, kc, host, func(n *corev1.Node) bool {
		return simtest.NodeReady(n) == corev1.ConditionTrue && !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
			return tt.Key == "kubevirt.io/drain" || tt.Key == corev1.TaintNodeOutOfService || tt.Key == corev1.TaintNodeUnreachable
		})
	}); err != nil {
		t.Error(err)
	}
	if out, err := m.Remove(ctx, repl); err != nil {
		t.Errorf("rm of the replacement: %v\n%s", err, out)
	}
}

func hostDownNIC0(v *kubevirtv1.VirtualMachineInstance) string {
	for _, i := range v.Status.Interfaces {
		if i.Name == "nic-0" {
			return i.IP
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
