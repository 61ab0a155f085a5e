package simctl

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// launcherPods lists the virt-launcher pods of the namespace.
func launcherPods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	list, err := env.kube.CoreV1().Pods(ns).List(testContext(t), metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitPods polls (the pod list has no single object to watch) until the
// namespace's launcher pods satisfy cond.
func waitPods(t *testing.T, ns, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(testContext(t), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher"})
		if err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		pods = list.Items
		return cond(pods), nil
	})
	if err != nil {
		t.Fatalf("launcher pods of %s: %s: %v (have %d)", ns, what, err, len(pods))
	}
	return pods
}

// TestLauncherPodBoundByKubeScheduler: a VMI gets one virt-launcher pod
// as KubeVirt renders it; the real kube-scheduler (default-scheduler)
// binds it, the simulated kubelet runs it, and the VMI's node is the
// pod's. Deleting the VM removes the pod.
func TestLauncherPodBoundByKubeScheduler(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "placed", vmOpts{labels: map[string]string{"app": "placed"}})
	vmi := waitVMI(t, ns, "placed", "Running", running)
	pods := launcherPods(t, ns)
	if len(pods) != 1 {
		t.Fatalf("%d launcher pods, want 1", len(pods))
	}
	pod := pods[0]
	if pod.Spec.NodeName == "" || pod.Spec.NodeName != vmi.Status.NodeName {
		t.Errorf("pod on %q, VMI on %q: want the same host", pod.Spec.NodeName, vmi.Status.NodeName)
	}
	if !strings.HasPrefix(pod.Name, "virt-launcher-placed-") {
		t.Errorf("pod name %s, want virt-launcher-placed-<suffix>", pod.Name)
	}
	for k, want := range map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(vmi.UID),
		"vm.kubevirt.io/name": "placed", "vmi.kubevirt.io/id": "placed", "app": "placed"} {
		if got := pod.Labels[k]; got != want {
			t.Errorf("pod label %s = %q, want %q", k, got, want)
		}
	}
	if got := pod.Annotations["kubevirt.io/domain"]; got != "placed" {
		t.Errorf("pod annotation kubevirt.io/domain = %q, want placed", got)
	}
	if ref := metav1.GetControllerOf(&pod); ref == nil || ref.Kind != "VirtualMachineInstance" || ref.UID != vmi.UID {
		t.Errorf("pod controller %+v, want the VMI", ref)
	}
	if pod.Spec.NodeSelector["kubevirt.io/schedulable"] != "true" {
		t.Errorf("pod nodeSelector %v lacks kubevirt.io/schedulable: \"true\"", pod.Spec.NodeSelector)
	}
	// 1Gi asked, plus KubeVirt's overhead (well over 200Mi).
	if mem := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("1224Mi")) < 0 {
		t.Errorf("compute memory request %s, want 1Gi plus KubeVirt's overhead", mem.String())
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("pod phase %s, want Running", pod.Status.Phase)
	}
	if pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("pod scheduler %q, want %s", pod.Spec.SchedulerName, corev1.DefaultSchedulerName)
	}
	ev := scheduledEvent(t, ns, pod.Name)
	if ev.ReportingController != corev1.DefaultSchedulerName || !strings.Contains(ev.Message, "Successfully assigned "+ns+"/"+pod.Name+" to "+pod.Spec.NodeName) {
		t.Errorf("Scheduled event from %q: %q; want default-scheduler assigning the pod to %s", ev.ReportingController, ev.Message, pod.Spec.NodeName)
	}

	deleteObject(t, gvrVM, ns, "placed")
	waitPods(t, ns, "gone with the VM", func(p []corev1.Pod) bool { return len(p) == 0 })
}

// scheduledEvent is the pod's Scheduled event.
func scheduledEvent(t *testing.T, ns, pod string) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := wait.PollUntilContextTimeout(testContext(t), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := env.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": pod, "reason": "Scheduled"}.String()})
		if err != nil || len(list.Items) == 0 {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		found = list.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("Scheduled event of pod %s/%s: %v", ns, pod, err)
	}
	return found
}

// cordon sets a host's spec.unschedulable.
func cordon(t *testing.T, node string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := env.kube.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCordonedHostReceivesNothing: with harvester-node-0 cordoned, the real
// scheduler puts no VM there; a VM pinned to it waits with the
// scheduler's own message, and runs there once the host is uncordoned.
// Not parallel: the cordon would steer the other tests' VMs.
func TestCordonedHostReceivesNothing(t *testing.T) {
	ns := testNamespace(t)
	const host = "harvester-node-0"
	cordon(t, host, true)
	t.Cleanup(func() { cordon(t, host, false) })
	pinned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: hostnameKey, Operator: corev1.NodeSelectorOpIn, Values: []string{host}}}}}}}}
	createVM(t, ns, "pinned", vmOpts{affinity: pinned})
	for i := range 4 {
		createVM(t, ns, fmt.Sprintf("free-%d", i), vmOpts{})
	}
	for i := range 4 {
		if node := waitVMI(t, ns, fmt.Sprintf("free-%d", i), "Running", running).Status.NodeName; node == host {
			t.Errorf("free-%d placed on the cordoned %s", i, host)
		}
	}
	const want = "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector."
	waitVMI(t, ns, "pinned", "Unschedulable on the cordoned host", unschedulableWith(want))
	cordon(t, host, false)
	if node := waitVMI(t, ns, "pinned", "Running once uncordoned", running).Status.NodeName; node != host {
		t.Errorf("pinned VM on %s, want %s", node, host)
	}
}

// TestQuotaRefusesLauncherPod: the API server's quota admission judges
// the launcher pod, as on Harvester: under `pods: 0` the VMI is Pending
// with KubeVirt's FailedCreate condition and event, and Harvester's VMI
// controller then stops the VM (StopVMIfExceededQuota in
// pkg/controller/master/virtualmachine/vmi_controller.go, stopVM in
// vm_controller.go: runStrategy Halted, annotation
// harvesterhci.io/insufficient-resource-quota, event
// InsufficientResourceQuota). Started again once the quota is gone, the
// pod is created and the VM runs, and the quota counts the pod with its
// memory overhead.
func TestQuotaRefusesLauncherPod(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	ctx := testContext(t)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	if _, err := env.kube.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, ns, "no-pods", func(q *corev1.ResourceQuota) bool { return len(q.Status.Hard) > 0 })
	createVM(t, ns, "refused", vmOpts{})
	v := waitVMI(t, ns, "refused", "Pending with FailedCreate", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCond(v, kubevirtv1.VirtualMachineInstanceSynchronized)
		return v != nil && v.Status.Phase == kubevirtv1.Pending && c != nil && c.Status == corev1.ConditionFalse && c.Reason == "FailedCreate"
	})
	if c := vmiCond(v, kubevirtv1.VirtualMachineInstanceSynchronized); !strings.Contains(c.Message, "exceeded quota: no-pods") {
		t.Errorf("FailedCreate message %q does not name the quota", c.Message)
	}
	if msg := waitEvent(t, ns, "refused", "FailedCreate"); !strings.HasPrefix(msg, "Error creating pod: ") || !strings.Contains(msg, "exceeded quota: no-pods") {
		t.Errorf("FailedCreate event %q", msg)
	}
	// The memory quota is in force (its status filled) before the pod can
	// be made, so admission charges the pod.
	mem := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "memory"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsMemory: resource.MustParse("100Gi")}}}
	if _, err := env.kube.CoreV1().ResourceQuotas(ns).Create(ctx, mem, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQuota(t, ns, "memory", func(q *corev1.ResourceQuota) bool { return len(q.Status.Hard) > 0 })
	stopped := waitVM(t, ns, "refused", "stopped by Harvester", func(vm *kubevirtv1.VirtualMachine) bool {
		return vm != nil && vm.Spec.RunStrategy != nil && *vm.Spec.RunStrategy == kubevirtv1.RunStrategyHalted
	})
	if msg := stopped.Annotations["harvesterhci.io/insufficient-resource-quota"]; !strings.Contains(msg, "exceeded quota: no-pods") {
		t.Errorf("stopped VM's insufficient-resource-quota annotation %q does not name the quota", msg)
	}
	if msg := waitEvent(t, ns, "refused", "InsufficientResourceQuota"); !strings.HasPrefix(msg, "Set runStrategy to Halted: ") {
		t.Errorf("InsufficientResourceQuota event %q", msg)
	}
	if err := env.kube.CoreV1().ResourceQuotas(ns).Delete(ctx, "no-pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's quota admission reads quotas from its informer,
	// which on a loaded machine sees the deletion late: started before, the
	// pod is refused again and Harvester halts the VM again.
	waitPodAdmitted(t, ns)
	patchVM(t, ns, "refused", map[string]any{"spec": map[string]any{"runStrategy": string(kubevirtv1.RunStrategyAlways)}})
	waitVMI(t, ns, "refused", "Running once the quota is gone and it is started", running)
	// 1Gi of guest memory and KubeVirt's overhead (over 200Mi).
	waitQuota(t, ns, "memory", func(q *corev1.ResourceQuota) bool {
		used := q.Status.Used[corev1.ResourceRequestsMemory]
		return used.Cmp(resource.MustParse("1224Mi")) > 0
	})
}

// waitQuota watches a quota until cond holds and returns it.
func waitQuota(t *testing.T, ns, name string, cond func(*corev1.ResourceQuota) bool) *corev1.ResourceQuota {
	t.Helper()
	gvr := corev1.SchemeGroupVersion.WithResource("resourcequotas")
	return waitFor(t, gvr, ns, name, "its condition", func(q *corev1.ResourceQuota) bool { return q != nil && cond(q) })
}

// waitPodAdmitted waits until kube-apiserver admits a pod in namespace ns
// (a dry-run create, which passes quota admission and stores nothing).
func waitPodAdmitted(t *testing.T, ns string) {
	t.Helper()
	// A memory request: the namespace's other quota constrains requests.memory.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quota-probe"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}}}}}}
	var last error
	err := wait.PollUntilContextTimeout(testContext(t), 500*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := env.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && ctx.Err() == nil {
			last = err
		}
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("a pod in %s is still refused after its quota was deleted: %v", ns, last)
	}
}
