package simctl

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestMaintainModeStrategyWhereRead: each maintain-mode rule of Harvester
// v1.8 reads one object, and the check must read the same one.
//   - ml-pod, made with Shutdown on the VM and its template, then
//     relabelled Migrate: Harvester's VM controller copies the label to the
//     VMI, but the launcher pod keeps Shutdown. The nodedrain controller
//     (VMI's label) does not stop it, and the drain filter (pod's label)
//     never evicts it: it stays, maintenance never completes.
//   - ml-vmi, made with Migrate on the VM and its template, then its VM
//     (not the template) relabelled Shutdown: Harvester's VM controller
//     copies the VM's own label to the VMI (vm_controller.go syncLabels,
//     syncLabelsToVmi) and keeps it so at every sync, while the template
//     and the launcher pod keep Migrate. The nodedrain controller lists it
//     by the VMI's label and stops it.
//   - ml-mig, no label: migrates.
//
// The expectations are what Harvester's and KubeVirt's own code do in the
// simulator: the check is run first and must agree.
func TestMaintainModeStrategyWhereRead(t *testing.T) {
	const host = "harvester-node-2"
	ns := maintenanceScene(t, host)
	strategyVM(t, ns, "ml-pod", "Shutdown", host)
	strategyVM(t, ns, "ml-vmi", "Migrate", host)
	strategyVM(t, ns, "ml-mig", "", host)
	for _, name := range []string{"ml-pod", "ml-vmi", "ml-mig"} {
		if v := waitVMI(t, ns, name, "running, live-migratable", migratable); v.Status.NodeName != host {
			t.Fatalf("%s placed on %s, want %s", name, v.Status.NodeName, host)
		}
	}
	patchVM(t, ns, "ml-pod", map[string]any{"metadata": map[string]any{"labels": map[string]any{keyStrategy: "Migrate"}},
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{keyStrategy: "Migrate"}}}}})
	waitVMI(t, ns, "ml-pod", "relabelled Migrate by Harvester", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v != nil && v.Labels[keyStrategy] == "Migrate"
	})
	if l := launcherLabels(t, ns, "ml-pod"); l[keyStrategy] != "Shutdown" {
		t.Fatalf("ml-pod's launcher pod labels %v, want the Shutdown it was made with", l)
	}
	// A label set on the VMI by hand would not stay: Harvester's VM
	// controller sets the VMI's labels again from the VM at every change of
	// the VM, which a loaded machine makes at any moment. The VM's own
	// label is what it keeps on the VMI.
	patchVM(t, ns, "ml-vmi", map[string]any{"metadata": map[string]any{"labels": map[string]any{keyStrategy: "Shutdown"}}})
	waitVMI(t, ns, "ml-vmi", "relabelled Shutdown by Harvester", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v != nil && v.Labels[keyStrategy] == "Shutdown"
	})
	if l := launcherLabels(t, ns, "ml-vmi"); l[keyStrategy] != "Migrate" {
		t.Fatalf("ml-vmi's launcher pod labels %v, want the Migrate it was made with", l)
	}

	r, code := maintenanceCheck(t, "--namespace", ns, "--cluster-name", "mm", host)
	got := r.verdicts()
	want := map[string]string{"ml-pod": "blocks |", "ml-vmi": "shut down Shutdown|never", "ml-mig": "migrates |"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("check: %s %q, want %q", name, got[name], w)
		}
	}
	if code != 1 || !r.Failed {
		t.Errorf("check: exit %d, failed %v; want 1", code, r.Failed)
	}
	out, err := simCLI(t, "maintenance enable", "--timeout", "45s", host)
	if err == nil {
		t.Fatalf("enable completed, want ml-pod left on the host:\n%s", out)
	}
	for _, line := range []string{"blocked   " + ns + "/ml-pod: the drain skipped its pod", "shut down " + ns + "/ml-vmi\n", "migrated  " + ns + "/ml-mig -> "} {
		if !strings.Contains(out, line) {
			t.Errorf("simulator's report lacks %q:\n%s", line, out)
		}
	}
	if ann, _ := hostAnnotations(t, host); ann[keyStatus] != "running" {
		t.Errorf("maintain-status %q, want running (never completed)", ann[keyStatus])
	}
	waitVM(t, ns, "ml-vmi", "halted by the nodedrain controller", func(vm *kubevirtv1.VirtualMachine) bool {
		return runStrategy(vm) == kubevirtv1.RunStrategyHalted
	})
	if out, err := simCLI(t, "maintenance disable", host); err != nil {
		t.Fatalf("disable: %v\n%s", err, out)
	}
}

// TestMaintenanceMigrationQuota: a 2-CPU VM in a namespace whose
// ResourceQuota has room for the VM but not for its migration's target pod
// as well. KubeVirt's target pod is refused by quota admission and the
// migration stays Pending (condition RejectedByResourceQuota), so the
// maintenance never completes. The same in a namespace of a Rancher
// project (its limit on the namespace, Rancher's default quota): Harvester
// scales that quota for the migration and the VM migrates. The quotas are
// set from the running launcher pods' own charge, whatever KubeVirt renders.
func TestMaintenanceMigrationQuota(t *testing.T) {
	const host = "harvester-node-2"
	plain := maintenanceScene(t, host)
	project := namespaceOf(t, plain+"-rancher")
	for _, ns := range []string{plain, project} {
		createQuota(t, ns, ns == project)
		l := map[string]string{"guestcluster.harvesterhci.io/name": "mq", "nodepool.harvesterhci.io/name": "p", "harvesterhci.io/vmName": "mq"}
		createVM(t, ns, "mq", vmOpts{labels: l, userData: agentCloudConfig, affinity: preferHost(host), cpuLimit: "2"})
	}
	tight := map[string]string{}
	for _, ns := range []string{plain, project} {
		if v := waitVMI(t, ns, "mq", "running, live-migratable", migratable); v.Status.NodeName != host {
			t.Fatalf("%s/mq placed on %s, want %s", ns, v.Status.NodeName, host)
		}
		tight[ns] = tightenQuota(t, ns, ns == project)
	}

	r, code := maintenanceCheck(t, "--cluster-name", "mq", host)
	plainWhy, projectAction := "", ""
	for _, v := range r.VMs {
		switch v.Namespace {
		case plain:
			plainWhy = v.Action + ": " + v.Why
		case project:
			projectAction = v.Action
		}
	}
	if !strings.HasPrefix(plainWhy, "blocks: ") || !strings.Contains(plainWhy, tight[plain]) {
		t.Errorf("check of %s/mq: %q, want blocks with %q", plain, plainWhy, tight[plain])
	}
	if projectAction != "migrates" || code != 1 {
		t.Errorf("check: %s/mq %q (want migrates), exit %d (want 1)", project, projectAction, code)
	}

	out, err := simCLI(t, "maintenance enable", "--timeout", "60s", host)
	if err == nil {
		t.Fatalf("enable completed, want %s/mq left on the host:\n%s", plain, out)
	}
	if !strings.Contains(out, "migrated  "+project+"/mq -> ") || !strings.Contains(out, "blocked   "+plain+"/mq") {
		t.Errorf("simulator's report: want %s/mq migrated and %s/mq blocked:\n%s", project, plain, out)
	}
	rejected := waitMigration(t, plain, "mq", func(m *kubevirtv1.VirtualMachineInstanceMigration) bool {
		for _, c := range m.Status.Conditions {
			if c.Type == kubevirtv1.VirtualMachineInstanceMigrationRejectedByResourceQuota && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	if rejected.Status.Phase != kubevirtv1.MigrationPending {
		t.Errorf("%s/mq's migration phase %s, want Pending", plain, rejected.Status.Phase)
	}
	if out, err := simCLI(t, "maintenance disable", host); err != nil {
		t.Fatalf("disable: %v\n%s", err, out)
	}
}

// launcherLabels are the labels of the VMI's virt-launcher pod.
func launcherLabels(t *testing.T, ns, vmi string) map[string]string {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(testContext(t), metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher,vm.kubevirt.io/name=" + vmi})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("launcher pod of %s/%s: %v (%d pods)", ns, vmi, err, len(pods.Items))
	}
	return pods.Items[0].Labels
}

// namespaceOf creates namespace name for the test, deleted after.
func namespaceOf(t *testing.T, name string) string {
	t.Helper()
	if _, err := env.kube.CoreV1().Namespaces().Create(testContext(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.kube.CoreV1().Namespaces().Delete(testContext(t), name, metav1.DeleteOptions{}) })
	return name
}

// Rancher's keys, written out from Harvester v1.8's pkg/util/constants.go.
const (
	keyProjectQuota = "field.cattle.io/resourceQuota"
	keyDefaultQuota = "resourcequota.management.cattle.io/default-resource-quota"
)

// createQuota makes quota "rq" with room to spare (limits.cpu 100), as
// Rancher's default quota with the project's limit on the namespace when
// rancher is set.
func createQuota(t *testing.T, ns string, rancher bool) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rq"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("100")}}}
	if rancher {
		q.Labels = map[string]string{keyDefaultQuota: "true"}
		setProjectLimit(t, ns, "100")
	}
	if _, err := env.kube.CoreV1().ResourceQuotas(ns).Create(testContext(t), q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create quota in %s: %v", ns, err)
	}
}

func setProjectLimit(t *testing.T, ns, cpu string) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		keyProjectQuota: `{"limit":{"limitsCpu":"` + cpu + `"}}`}}})
	if _, err := env.kube.CoreV1().Namespaces().Patch(testContext(t), ns, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate namespace %s: %v", ns, err)
	}
}

// tightenQuota waits until the quota counts the VM's running launcher
// pod, the namespace's only pod (its charge is whatever KubeVirt renders,
// sidecars included, as kube-controller-manager's quota controller sums
// it), then sets its limits.cpu 1m short of twice that (for Rancher's
// quota, as Rancher does, the project's limit on the namespace too, from
// which Harvester's resourcequota controller scales the quota): room for
// the VM, not for a second pod like it. It
// returns the refusal kube-apiserver would give the second pod.
func tightenQuota(t *testing.T, ns string, rancher bool) string {
	t.Helper()
	q := waitQuota(t, ns, "rq", func(q *corev1.ResourceQuota) bool {
		used := q.Status.Used[corev1.ResourceLimitsCPU]
		return !used.IsZero()
	})
	used := q.Status.Used[corev1.ResourceLimitsCPU].DeepCopy()
	hard := used.DeepCopy()
	hard.Add(used)
	hard.Sub(resource.MustParse("1m"))
	if rancher {
		setProjectLimit(t, ns, hard.String())
	}
	q.Spec.Hard[corev1.ResourceLimitsCPU] = hard
	if _, err := env.kube.CoreV1().ResourceQuotas(ns).Update(testContext(t), q, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update quota in %s: %v", ns, err)
	}
	waitQuota(t, ns, "rq", func(q *corev1.ResourceQuota) bool {
		h := q.Status.Hard[corev1.ResourceLimitsCPU]
		return h.Cmp(hard) == 0
	})
	return "exceeded quota: rq, requested: limits.cpu=" + used.String() + ", used: limits.cpu=" + used.String() + ", limited: limits.cpu=" + hard.String()
}

// waitMigration waits until the migration of VMI vmi in ns (one made
// already) meets cond.
func waitMigration(t *testing.T, ns, vmi string, cond func(*kubevirtv1.VirtualMachineInstanceMigration) bool) *kubevirtv1.VirtualMachineInstanceMigration {
	t.Helper()
	list, err := env.dyn.Resource(gvrVMIM).Namespace(ns).List(testContext(t), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list migrations in %s: %v", ns, err)
	}
	for i := range list.Items {
		if m := decode[kubevirtv1.VirtualMachineInstanceMigration](t, &list.Items[i]); m.Spec.VMIName == vmi {
			return waitFor(t, gvrVMIM, ns, m.Name, "its condition", func(m *kubevirtv1.VirtualMachineInstanceMigration) bool { return m != nil && cond(m) })
		}
	}
	t.Fatalf("no migration of %s/%s", ns, vmi)
	return nil
}
