package driver_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// launcherResources are the quota resources of the launcher pod's CPU and
// memory, and the smallest step of each.
var launcherResources = map[corev1.ResourceName]resource.Quantity{
	corev1.ResourceRequestsCPU: resource.MustParse("1m"), corev1.ResourceLimitsCPU: resource.MustParse("1m"),
	corev1.ResourceRequestsMemory: resource.MustParse("1"), corev1.ResourceLimitsMemory: resource.MustParse("1"),
}

// TestQuotaMatchesLauncherPod: the pre-check asks exactly what the API
// server's quota admission charges for the virt-launcher pod KubeVirt's
// virt-controller renders, its guest-console-log sidecar included (on
// Harvester's KubeVirt configuration). A first machine's charge is read
// from the quota's status.used, as admission counted the real pod; a
// quota of exactly that lets a second machine of the same flags through,
// and one of 1m CPU or one byte of memory less, in any of requests.cpu,
// limits.cpu, requests.memory and limits.memory, makes the driver refuse
// it before anything exists, naming that resource.
//
// Sequential: a ResourceQuota in namespace default counts and limits every
// test's machines.
func TestQuotaMatchesLauncherPod(t *testing.T) {
	const cluster, quotaName = "e2e-qpod", "e2e-launcher"
	r := newRM(t, cluster)
	flags := append(slices.Clone(imageAndNet), "--harvester-cpu-count=1", "--harvester-memory-size=2")
	addQuota(t, quotaName, corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("100"), corev1.ResourceLimitsCPU: resource.MustParse("100"),
		corev1.ResourceRequestsMemory: resource.MustParse("1Ti"), corev1.ResourceLimitsMemory: resource.MustParse("1Ti"),
	})
	before := quotaUsed(t, quotaName)

	first := cluster + "-pool1-p0000"
	r.mustCreate(first, flags...)
	charged := quotaUsed(t, quotaName)
	for n := range launcherResources {
		q := charged[n]
		q.Sub(before[n])
		charged[n] = q
	}
	pod := launcherPodFor(t, first)
	if !slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "guest-console-log" }) {
		t.Errorf("launcher pod %s has no guest-console-log sidecar (init containers %v)", pod.Name, pod.Spec.InitContainers)
	}
	t.Logf("quota admission charged launcher pod %s: requests.cpu %s, limits.cpu %s, requests.memory %s, limits.memory %s", pod.Name,
		charged.Name(corev1.ResourceRequestsCPU, resource.DecimalSI), charged.Name(corev1.ResourceLimitsCPU, resource.DecimalSI),
		charged.Name(corev1.ResourceRequestsMemory, resource.BinarySI), charged.Name(corev1.ResourceLimitsMemory, resource.BinarySI))
	r.mustRun("rm", "-y", first)
	waitUsedBack(t, quotaName, before)

	setHard(t, quotaName, func(n corev1.ResourceName) resource.Quantity {
		q := before[n].DeepCopy()
		q.Add(charged[n])
		return q
	})
	exact := cluster + "-pool1-p0001"
	r.mustCreate(exact, flags...)
	r.mustRun("rm", "-y", exact)
	waitUsedBack(t, quotaName, before)

	for i, short := range []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory} {
		setHard(t, quotaName, func(n corev1.ResourceName) resource.Quantity {
			q := before[n].DeepCopy()
			q.Add(charged[n])
			if n == short {
				q.Sub(launcherResources[n])
			}
			return q
		})
		name := cluster + "-pool1-s000" + strconv.Itoa(i)
		out, err := r.create(name, append(slices.Clone(flags), "--harvester-wait-timeout=30")...)
		want := "the machine does not fit its namespace's quota, so nothing was created: ResourceQuota default/" + quotaName + ": " + string(short) + ": the machine needs "
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("%s one step short of the launcher pod's charge: %v, want %q\n%s", short, err, want, out)
		}
		if _, err := virt.KubevirtV1().VirtualMachines(namespace).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s short: the refused machine's VM exists (%v)", short, err)
		}
		if err == nil {
			r.mustRun("rm", "-y", name)
		}
	}
}

// TestCreateEndsWhenHarvesterHalts: a launcher pod the API server's quota
// refuses although the pre-check let the machine through (a quota of no
// pods of the cluster's globalDefault PriorityClass, which the API
// server's Priority admission gives the pod and the driver cannot read)
// gets its VM halted by Harvester's VMI controller (StopVMIfExceededQuota:
// runStrategy Halted, annotation harvesterhci.io/insufficient-resource-quota,
// reason InsufficientResourceQuota), which nothing undoes. The create ends
// at once, naming Harvester's reason and the refusal, well within its
// --harvester-wait-timeout, and removes what it made: no VM, Secret or PVC.
//
// Sequential: a global default PriorityClass and a quota of no pods of it
// refuse every test's launcher pods.
func TestCreateEndsWhenHarvesterHalts(t *testing.T) {
	const cluster, class, waitTimeout = "e2e-qhalt", "e2e-default-class", 300 * time.Second
	r := newRM(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 1000, GlobalDefault: true}
	if _, err := kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	addQuotaSpec(t, "e2e-no-default-class", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
		ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{class}}}}})

	name := cluster + "-pool1-h0000"
	start := time.Now()
	out, err := r.create(name, append(slices.Clone(imageAndNet), "--harvester-wait-timeout="+strconv.Itoa(int(waitTimeout.Seconds())))...)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("a machine whose launcher pod the quota refuses was created:\n%s", out)
	}
	for _, want := range []string{
		"VM default/" + name + " was halted by Harvester for InsufficientResourceQuota (",
		"exceeded quota: e2e-no-default-class",
		"and nothing starts it again, while waiting for it to run and report an address",
		"create failed, removing what it created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "timed out") {
		t.Errorf("the create waited out its timeout:\n%s", out)
	}
	if took > waitTimeout/2 {
		t.Errorf("the create took %s, not well within its --harvester-wait-timeout of %s", took.Round(time.Second), waitTimeout)
	}
	r.assertNothingLeft()
}

// quotaUsed is a quota's status.used of the launcher's resources.
func quotaUsed(t *testing.T, name string) corev1.ResourceList {
	t.Helper()
	q, err := kube.CoreV1().ResourceQuotas(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := corev1.ResourceList{}
	for n := range launcherResources {
		used[n] = q.Status.Used[n].DeepCopy()
	}
	return used
}

// waitUsedBack waits until the quota's usage of the launcher's resources
// is used again (the removed machine's pod is no longer charged).
func waitUsedBack(t *testing.T, name string, used corev1.ResourceList) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitQuota(ctx, t, name, func(q *corev1.ResourceQuota) bool {
		for n, u := range used {
			if got := q.Status.Used[n]; got.Cmp(u) != 0 {
				return false
			}
		}
		return true
	})
}

// setHard sets the quota's hard limit of each launcher resource to
// hard(resource) and waits until the quota controller has put it in
// status.hard, which admission reads.
func setHard(t *testing.T, name string, hard func(corev1.ResourceName) resource.Quantity) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := kube.CoreV1().ResourceQuotas(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for n := range launcherResources {
		q.Spec.Hard[n] = hard(n)
	}
	if _, err := kube.CoreV1().ResourceQuotas(namespace).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQuota(ctx, t, name, func(got *corev1.ResourceQuota) bool {
		for n := range launcherResources {
			if h := got.Status.Hard[n]; h.Cmp(q.Spec.Hard[n]) != 0 {
				return false
			}
		}
		return true
	})
}

// launcherPodFor is the virt-launcher pod virt-controller made for the
// machine's VM instance (labels kubevirt.io=virt-launcher and
// kubevirt.io/created-by=<the instance's UID>, template.go podLabels).
func launcherPodFor(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	vmi := getVMI(t, name)
	if vmi == nil {
		t.Fatalf("machine %s has no VM instance", name)
	}
	sel := "kubevirt.io=virt-launcher,kubevirt.io/created-by=" + string(vmi.UID)
	pods, err := kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d launcher pods of %s, want 1", len(pods.Items), name)
	}
	return &pods.Items[0]
}
