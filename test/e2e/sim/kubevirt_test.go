package sim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// The namespace KubeVirt runs in on Harvester (the KubeVirt CR
// harvester-system/kubevirt).
const kubeVirtNamespace = "harvester-system"

// TestKubeVirtRunsFromBin: while the simulator runs, KubeVirt's own
// virt-api and virt-controller run as its children from bin/, each seeing
// a Pod's ServiceAccount files with namespace harvester-system (they take
// their install namespace from nowhere else).
func TestKubeVirtRunsFromBin(t *testing.T) {
	for _, name := range []string{"virt-api", "virt-controller"} {
		bin, err := simtest.Bin(name)
		if err != nil {
			t.Fatal(err)
		}
		pid := childRunning(t, simulator.PID(), bin)
		if pid == 0 {
			t.Errorf("no child of the simulator (pid %d) runs %s", simulator.PID(), bin)
			continue
		}
		ns, err := readPodFile(pid, "namespace")
		if err != nil || ns != kubeVirtNamespace {
			t.Errorf("%s (pid %d) sees ServiceAccount namespace %q (%v), want %s", name, pid, ns, err, kubeVirtNamespace)
		}
	}
}

// readPodFile reads a ServiceAccount file as process pid sees it, through
// /proc/PID/root with /var/run resolved (an absolute symbolic link would
// lead back to this process's root).
func readPodFile(pid int, name string) (string, error) {
	run, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/root%s/secrets/kubernetes.io/serviceaccount/%s", pid, run, name))
	return string(data), err
}

// childRunning is the pid of a child of parent whose executable is bin (0:
// none).
func childRunning(t *testing.T, parent int, bin string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != bin {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	return 0
}

// TestKubeVirtWebhooksRegistered: virt-api's webhook configurations, as
// virt-operator v1.7.0 names them (pkg/virt-operator/resource/generate/
// components/webhooks.go), are registered and send to virt-api; the
// subresources API is served through the aggregation layer.
func TestKubeVirtWebhooksRegistered(t *testing.T) {
	ctx := testContext(t)
	val, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "virt-api-validator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mut, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "virt-api-mutator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{}
	for _, w := range val.Webhooks {
		urls[w.Name] = ptrString(w.ClientConfig.URL)
	}
	for _, w := range mut.Webhooks {
		urls[w.Name] = ptrString(w.ClientConfig.URL)
	}
	want := map[string]string{
		"virtualmachine-validator.kubevirt.io":                 "/virtualmachines-validate",
		"virtualmachineinstances-create-validator.kubevirt.io": "/virtualmachineinstances-validate-create",
		"migration-create-validator.kubevirt.io":               "/migration-validate-create",
		"virt-launcher-eviction-interceptor.kubevirt.io":       "/pod-eviction-validate",
		"virtualmachines-mutator.kubevirt.io":                  "/virtualmachines-mutate",
		"virtualmachineinstances-mutator.kubevirt.io":          "/virtualmachineinstances-mutate",
		"migrations-mutator.kubevirt.io":                       "/migration-mutate-create",
	}
	for name, path := range want {
		if url, ok := urls[name]; !ok || !strings.HasPrefix(url, "https://127.0.0.1:") || !strings.HasSuffix(url, path) {
			t.Errorf("webhook %s: url %q (registered: %v), want virt-api's %s on loopback", name, url, ok, path)
		}
	}
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	for _, name := range []string{"v1.subresources.kubevirt.io", "v1alpha3.subresources.kubevirt.io"} {
		svc, err := dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "namespace"); ns != kubeVirtNamespace || !hasCondition(svc, "Available") {
			t.Errorf("APIService %s: service namespace %q, conditions %v", name, ns, svc.Object["status"])
		}
	}
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestKubeVirtRefusesRunningWithRunStrategy: a VM with both spec.running
// and spec.runStrategy is refused by KubeVirt's own VM admitter, with its
// message (pkg/virt-api/webhooks/validating-webhook/admitters/
// vms-admitter.go, v1.7.0).
func TestKubeVirtRefusesRunningWithRunStrategy(t *testing.T) {
	ctx := testContext(t)
	running, always := true, kubevirtv1.RunStrategyAlways
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "running-and-runstrategy", Namespace: "default"},
		Spec: kubevirtv1.VirtualMachineSpec{Running: &running, RunStrategy: &always,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
				// What Harvester's webhook wants of any VM (a CPU topology, a memory
				// limit), so that KubeVirt's refusal is the one left.
				Domain: kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Cores: 1}, Resources: kubevirtv1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				}},
			}}},
	}
	_, err := virt.KubevirtV1().VirtualMachines("default").Create(ctx, vm, metav1.CreateOptions{})
	const cause = "Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead"
	const want = `admission webhook "virtualmachine-validator.kubevirt.io" denied the request: ` + cause
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Message != want {
		t.Fatalf("VM with spec.running and spec.runStrategy: got %v, want KubeVirt's refusal %q", err, want)
	}
	if d := status.Status().Details; d == nil || len(d.Causes) != 1 || d.Causes[0].Field != "spec.running" || d.Causes[0].Message != cause {
		t.Errorf("refusal's causes %+v, want the one on spec.running", d)
	}
}

// checkVirtControllerLeads: KubeVirt's virt-controller runs and renews its
// leader Lease after since. It exits when it cannot renew the Lease within
// its 10 s deadline (a kube-apiserver restart on a loaded machine takes
// longer); the simulator starts it again, as the kubelet restarts a Pod's
// container.
func checkVirtControllerLeads(t *testing.T, since time.Time) {
	t.Helper()
	checkLeads(t, since, "virt-controller", kubeVirtNamespace, "virt-controller")
}

// checkLeads: the simulator's child running bin/NAME holds and renews
// Lease namespace/lease after since.
func checkLeads(t *testing.T, since time.Time, name, namespace, lease string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := simtest.Bin(name)
	if err != nil {
		t.Fatal(err)
	}
	leases := kube.CoordinationV1().Leases(namespace)
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false, nil
		}
		return l.Spec.RenewTime.After(since) && childRunning(t, simulator.PID(), bin) != 0, nil
	})
	if err != nil {
		t.Fatalf("%s does not run and renew its Lease %s/%s after %s: %v", name, namespace, lease, since.Format(time.RFC3339), err)
	}
}
