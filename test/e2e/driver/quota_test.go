package driver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// addQuota creates a ResourceQuota in the VM namespace, waits (watch) until
// kube-controller-manager's resourcequota controller has filled its status
// (the API server's quota admission refuses what it cannot judge before
// that), and removes it when the test ends.
func addQuota(t *testing.T, name string, hard corev1.ResourceList) {
	t.Helper()
	addQuotaSpec(t, name, corev1.ResourceQuotaSpec{Hard: hard})
}

// addQuotaSpec is addQuota with scopes.
func addQuotaSpec(t *testing.T, name string, spec corev1.ResourceQuotaSpec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
	if _, err := kube.CoreV1().ResourceQuotas(namespace).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ResourceQuotas(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	waitQuota(ctx, t, name, func(q *corev1.ResourceQuota) bool { return len(q.Status.Hard) > 0 })
}

// waitQuota watches a quota until cond holds.
func waitQuota(ctx context.Context, t *testing.T, name string, cond func(*corev1.ResourceQuota) bool) *corev1.ResourceQuota {
	t.Helper()
	w, err := kube.CoreV1().ResourceQuotas(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if q, ok := ev.Object.(*corev1.ResourceQuota); ok && ev.Type != watch.Deleted && cond(q) {
			return q
		}
	}
	t.Fatalf("quota %s: the condition never held (%v)", name, ctx.Err())
	return nil
}

// TestQuotaRefusesBeforeAnythingExists: a machine that does not fit the
// namespace's ResourceQuota fails pre-create naming each shortfall (the
// launcher's memory with KubeVirt's overhead, the CPU request Harvester's
// mutator derives, the volume), and nothing is
// created; with room it is created, and the API server charges its volume
// to the quota.
//
// Sequential: a ResourceQuota in namespace default counts and limits every
// test's machines.
func TestQuotaRefusesBeforeAnythingExists(t *testing.T) {
	r := newRM(t, "e2e-quota")
	base := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1", "--harvester-memory-size=2", "--harvester-disk-size=5"}
	addQuota(t, "e2e-tight", corev1.ResourceList{
		corev1.ResourceLimitsMemory:    resource.MustParse("2Gi"),
		corev1.ResourceRequestsCPU:     resource.MustParse("100m"),
		corev1.ResourceRequestsStorage: resource.MustParse("4Gi"),
	})
	out, err := r.create("e2e-quota-pool1-q0000", base...)
	if err == nil {
		t.Fatalf("create beyond the quota succeeded:\n%s", out)
	}
	for _, want := range []string{
		"the machine does not fit its namespace's quota, so nothing was created: ResourceQuota default/e2e-tight: limits.memory: the machine needs",
		"2Gi of 2Gi is free (0 used) (the VM's memory, KubeVirt's VM overhead ",
		// KubeVirt's guest-console-log sidecar is limited to 60M.
		"and its guest-console-log sidecar's 57.22Mi)",
		// Harvester's mutator asks 100% / overcommit-config's 1000% of the
		// CPUs, and KubeVirt's guest-console-log sidecar 5m.
		"ResourceQuota default/e2e-tight: requests.cpu: the machine needs 205m, 100m of 100m is free (0 used) (the VM's CPU and its guest-console-log sidecar's 5m)",
		"ResourceQuota default/e2e-tight: requests.storage: the machine needs 5Gi, 4Gi of 4Gi is free",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if err := kube.CoreV1().ResourceQuotas(namespace).Delete(context.Background(), "e2e-tight", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	addQuota(t, "e2e-room", corev1.ResourceList{
		corev1.ResourceLimitsMemory:    resource.MustParse("64Gi"),
		corev1.ResourceRequestsStorage: resource.MustParse("1Ti"),
	})
	name := "e2e-quota-pool1-q0001"
	r.mustCreate(name, base...)
	t.Cleanup(func() { r.mustRun("rm", "-y", name) })
	// The VM as stored carries the requests the quota check counted:
	// Harvester's mutator derives them from the limits (2 CPUs at 1000%,
	// 2Gi at 150% truncated to MiB).
	req := getVM(t, name).Spec.Template.Spec.Domain.Resources.Requests
	if cpu, mem := req.Cpu(), req.Memory(); cpu.String() != "200m" || mem.Cmp(resource.MustParse("1365Mi")) != 0 {
		t.Errorf("stored requests cpu %s memory %s, want 200m and 1365Mi", cpu.String(), mem.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	five := resource.MustParse("5Gi")
	waitQuota(ctx, t, "e2e-room", func(q *corev1.ResourceQuota) bool {
		used := q.Status.Used[corev1.ResourceRequestsStorage]
		return used.Cmp(five) >= 0
	})
}

// TestQuotaFiguresAsWritten: a storage quota of 9.9Gi, which the API
// server stores as 10630044057600m, reads 9.9Gi in the refusal.
//
// Sequential: a ResourceQuota in namespace default counts and limits every
// test's machines.
func TestQuotaFiguresAsWritten(t *testing.T) {
	r := newRM(t, "e2e-qunits")
	addQuota(t, "e2e-storage", corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("9.9Gi")})
	out, err := r.create("e2e-qunits-pool1-u0000", append(slices.Clone(imageAndNet), "--harvester-disk-size=10")...)
	if err == nil {
		t.Fatalf("a 10Gi disk under a 9.9Gi storage quota was created:\n%s", out)
	}
	for _, want := range []string{"ResourceQuota default/e2e-storage: requests.storage: the machine needs 10Gi, ", " of 9.9Gi is free ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "10630044057600m") {
		t.Errorf("a size in millibytes:\n%s", out)
	}
}

// TestQuotaScopes: quotas the virt-launcher pod is not subject to (a
// BestEffort and a Terminating `pods: 0`, and a PriorityClass selector of a
// class the launcher lacks) do not refuse a machine: the pre-check passes,
// the create succeeds, and the API server's own quota admission accepts
// the launcher pod KubeVirt would render for the stored VM (a dry-run
// create). A NotBestEffort `pods: 0` is the launcher's: the pre-check
// refuses it, and so does admission.
//
// Sequential: a ResourceQuota in namespace default counts and limits every
// test's machines.
func TestQuotaScopes(t *testing.T) {
	r := newRM(t, "e2e-qscope")
	noPods := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	addQuotaSpec(t, "e2e-besteffort", corev1.ResourceQuotaSpec{Hard: noPods, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}})
	addQuotaSpec(t, "e2e-terminating", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0"),
		corev1.ResourceLimitsMemory: resource.MustParse("1Mi")}, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}})
	addQuotaSpec(t, "e2e-priority", corev1.ResourceQuotaSpec{Hard: noPods, ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"e2e-high"}}}}})
	name := "e2e-qscope-pool1-s0000"
	r.mustCreate(name, imageAndNet...)
	t.Cleanup(func() { r.mustRun("rm", "-y", name) })
	launcher := launcherPodOf(t, name)
	if err := createDryRun(launcher); err != nil {
		t.Errorf("quota admission refuses the launcher pod of a machine the pre-check let through: %v", err)
	}

	addQuotaSpec(t, "e2e-notbesteffort", corev1.ResourceQuotaSpec{Hard: noPods, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}})
	out, err := r.create("e2e-qscope-pool1-s0001", imageAndNet...)
	if err == nil || !strings.Contains(out, "ResourceQuota default/e2e-notbesteffort: pods: the machine needs 1 for its virt-launcher pod, 0 of 0 is free") {
		t.Errorf("a NotBestEffort pods: 0 quota: %v\n%s", err, out)
	}
	if strings.Contains(out, "e2e-besteffort") || strings.Contains(out, "e2e-terminating") || strings.Contains(out, "e2e-priority") {
		t.Errorf("a quota the launcher is not subject to is reported:\n%s", out)
	}
	if err := createDryRun(launcher); err == nil || !strings.Contains(err.Error(), "exceeded quota: e2e-notbesteffort") {
		t.Errorf("quota admission of the launcher pod under a NotBestEffort pods: 0 quota: %v", err)
	}
}

// launcherPodOf is the launcher pod KubeVirt renders for the machine's
// stored VM, as quota admission reads it (harvester.LauncherPod).
func launcherPodOf(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	spec := getVM(t, name).Spec.Template.Spec
	pod := harvester.LauncherPod(&spec, "amd64", "")
	pod.Namespace, pod.GenerateName = namespace, "virt-launcher-"+name+"-"
	return pod
}

// createDryRun creates the pod with dryRun=All: admission judges it,
// nothing is stored or charged.
func createDryRun(pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// TestQuotaCountsStaticClaim: a machine with a static address makes one
// ConfigMap (its claim); `configmaps: 0` or `count/configmaps: 0` refuses
// it at pre-create, naming the quota, before anything exists.
//
// Sequential: a ResourceQuota in namespace default counts and limits every
// test's machines.
func TestQuotaCountsStaticClaim(t *testing.T) {
	r := newRM(t, "e2e-qclaim")
	addQuota(t, "e2e-noconfigmaps", corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("0"), "count/configmaps": resource.MustParse("0")})
	name := "e2e-qclaim-pool1-c0000"
	out, err := r.create(name, staticFlags("10.60.0.40-10.60.0.42/24")...)
	if err == nil {
		t.Fatalf("a static-address machine under configmaps: 0 was created:\n%s", out)
	}
	for _, want := range []string{
		"the machine does not fit its namespace's quota, so nothing was created: ResourceQuota default/e2e-noconfigmaps: configmaps: the machine needs 1 for its static-address claim ConfigMap, 0 of 0 is free",
		"ResourceQuota default/e2e-noconfigmaps: count/configmaps: the machine needs 1 for its static-address claim ConfigMap",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if held, ok := heldAddresses(t, "")[name]; ok {
		t.Errorf("the refused machine holds a claim on %s", held)
	}
}

// TestQuotaCountsCloudProviderCredential: the first machine of a cluster
// with --harvester-cloud-provider makes the cluster's ServiceAccount, token
// Secret and RoleBinding; `count/serviceaccounts: 0` refuses it at
// pre-create, naming the ServiceAccount, and nothing is made.
//
// Sequential: a ResourceQuota in namespace default counts and limits every
// test's machines.
func TestQuotaCountsCloudProviderCredential(t *testing.T) {
	const cluster = "e2e-qcred"
	r := newRM(t, cluster)
	addQuota(t, "e2e-noserviceaccounts", corev1.ResourceList{"count/serviceaccounts": resource.MustParse("0")})
	out, err := r.create(cluster+"-pool1-p0000", append(slices.Clone(imageAndNet), "--harvester-cloud-provider=rke2")...)
	if err == nil || !strings.Contains(out, "ResourceQuota default/e2e-noserviceaccounts: count/serviceaccounts: the machine needs 1 for its cluster's cloud-provider ServiceAccount") {
		t.Errorf("the cloud-provider ServiceAccount under count/serviceaccounts: 0: %v\n%s", err, out)
	}
	if _, err := kube.CoreV1().ServiceAccounts(namespace).Get(context.Background(), cluster, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused machine's cluster has a ServiceAccount (%v)", err)
	}
}

// TestVGPUCapacity: a vGPU profile no host offers is refused; one a host
// offers (node allocatable, as the device plugin reports it) is accepted
// while free (and kube-scheduler places its launcher pod on that host), and
// refused once the running machine holds it; the machine is not made
// to live-migrate.
//
// Sequential: it changes a host's allocatable.
func TestVGPUCapacity(t *testing.T) {
	const profile = "nvidia.com/GRID_A100-1B"
	setAllocatable(t, "harvester-node-1", profile, "1")
	t.Cleanup(func() { setAllocatable(t, "harvester-node-1", profile, "") })
	r := newRM(t, "e2e-vgpu")
	base := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1"}
	vgpu := func(device string) string {
		return `--harvester-vgpu-info={"vGPURequests":[{"name":"gpu1","deviceName":"` + device + `"}]}`
	}
	out, err := r.create("e2e-vgpu-pool1-g0000", append(base, vgpu("nvidia.com/NOPE"))...)
	if err == nil || !strings.Contains(out, "--harvester-vgpu-info: no host offers the vGPU profile nvidia.com/NOPE") {
		t.Errorf("a missing profile: %v\n%s", err, out)
	}
	first := "e2e-vgpu-pool1-g0001"
	r.mustCreate(first, append(base, vgpu(profile))...)
	t.Cleanup(func() { r.mustRun("rm", "-y", first) })
	if vmi := getVMI(t, first); vmi == nil || vmi.Status.NodeName != "harvester-node-1" {
		t.Fatalf("the vGPU machine is not on the one host offering its profile (VMI %v)", vmi != nil)
	}
	// A vGPU cannot migrate: LiveMigrate would hold the host's maintenance
	// mode forever, so the machine is shut down instead when its host drains.
	vm := getVM(t, first)
	if got := vm.Spec.Template.Spec.EvictionStrategy; got == nil || *got != kubevirtv1.EvictionStrategyLiveMigrateIfPossible {
		t.Errorf("vGPU machine's eviction strategy %v, want %s", got, kubevirtv1.EvictionStrategyLiveMigrateIfPossible)
	}
	// Harvester's mutator does not overcommit a vGPU VM's memory: the
	// request is the whole guest memory (4Gi: the ratio setting is set, so
	// nothing is reserved), as the quota check counted it.
	d := vm.Spec.Template.Spec.Domain
	if req := d.Resources.Requests.Memory(); d.Memory == nil || d.Memory.Guest == nil || req.Cmp(*d.Memory.Guest) != 0 || req.Cmp(resource.MustParse("4Gi")) != 0 {
		t.Errorf("vGPU machine's memory request %v, guest %v: want both 4Gi", req, d.Memory)
	}
	out, err = r.create("e2e-vgpu-pool1-g0002", append(base, vgpu(profile))...)
	if err == nil || !strings.Contains(out, "no host has room for the machine's vGPUs (1 "+profile+"); free per host:") ||
		!strings.Contains(out, "harvester-node-1: 0 of 1 "+profile) {
		t.Errorf("a second machine for the one vGPU: %v\n%s", err, out)
	}
}

// setAllocatable sets (value "": removes) a resource in a node's
// status.allocatable, as a device plugin would.
func setAllocatable(t *testing.T, node, res, value string) {
	t.Helper()
	var v any
	if value != "" {
		v = value
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"allocatable": map[string]any{res: v}}})
	if _, err := kube.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}
