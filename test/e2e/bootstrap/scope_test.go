package bootstrap_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// TestCSIBindingMigratesAndOptOut (issue 28, point 3): a credential made
// with --csi-cluster-wide (Harvester's own binding) may patch VMs in every
// namespace and doctor warns; `kubeconfig rotate` without it moves it into
// the VM namespace, and doctor is content; `driver-credential
// --cloud-provider` migrates such credentials of its machine namespaces too.
func TestCSIBindingMigratesAndOptOut(t *testing.T) {
	ctx := ctxT(t)
	const vmNS, otherNS, cluster = "e2e-scope-vms", "default", "e2e-wide"
	ensureNamespace(t, ctx, vmNS)
	a := credentials.Access{ClusterName: cluster, Namespace: vmNS}.WithDefaults()
	patchOther := authzv1.ResourceAttributes{Namespace: otherNS, Group: "kubevirt.io", Resource: "virtualmachines", Verb: "patch"}
	patchOwn := patchOther
	patchOwn.Namespace = vmNS

	wide := tempFile(t, "wide")
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNS, "--csi-cluster-wide", "-o", wide)
	t.Cleanup(func() { runBin(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", vmNS) })
	_, cs := guestClient(t, wide)
	if !allowed(t, ctx, cs, patchOther) {
		t.Errorf("--csi-cluster-wide: the token may not patch VMs in %s; Harvester's binding allows it", otherNS)
	}
	if row := doctorRow(t, cluster, vmNS, doctor.CheckCredentialScope); row.Status != doctor.Warn {
		t.Errorf("doctor %s with the cluster-wide binding: %s %q, want WARN", doctor.CheckCredentialScope, row.Status, row.Seen)
	}

	confined := tempFile(t, "confined")
	mustRun(t, "kubeconfig", "rotate", "--cluster-name", cluster, "--namespace", vmNS, "-o", confined)
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, a.ClusterRoleBindingName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("rotate kept the cluster-wide binding: %v", err)
	}
	_, cs = guestClient(t, confined)
	if allowed(t, ctx, cs, patchOther) || !allowed(t, ctx, cs, patchOwn) {
		t.Errorf("after rotate: patch VMs in %s allowed=%v (want false), in %s allowed=%v (want true)",
			otherNS, allowed(t, ctx, cs, patchOther), vmNS, allowed(t, ctx, cs, patchOwn))
	}
	if row := doctorRow(t, cluster, vmNS, doctor.CheckCredentialScope); row.Status != doctor.OK {
		t.Errorf("doctor %s after rotate: %s %q, want OK", doctor.CheckCredentialScope, row.Status, row.Seen)
	}

	// Made cluster-wide again (as the driver did before), then migrated by
	// the admin's driver-credential run for the namespace.
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNS, "--csi-cluster-wide")
	drv := []string{"--namespace", vmNS, "--service-account", "e2e-scope-driver", "--cloud-provider"}
	mustRun(t, append([]string{"driver-credential"}, drv...)...)
	t.Cleanup(func() { runBin(t, append([]string{"driver-credential", "revoke"}, drv...)...) })
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, a.ClusterRoleBindingName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("driver-credential --cloud-provider kept the guest's cluster-wide binding: %v", err)
	}
	if _, err := admin.RbacV1().RoleBindings(vmNS).Get(ctx, a.CSIRoleBindingName(), metav1.GetOptions{}); err != nil {
		t.Errorf("driver-credential --cloud-provider: no RoleBinding %s: %v", a.CSIRoleBindingName(), err)
	}
	_, cs = guestClient(t, confined)
	if allowed(t, ctx, cs, patchOther) {
		t.Errorf("after driver-credential: the guest may patch VMs in %s", otherNS)
	}
}

// TestDoctorWarnsOfASharedNamespace (issue 28, point 4): a VM of another
// guest cluster in the namespace makes doctor warn.
func TestDoctorWarnsOfASharedNamespace(t *testing.T) {
	ctx := ctxT(t)
	const vmNS, cluster = "e2e-shared-vms", "e2e-shared-a"
	ensureNamespace(t, ctx, vmNS)
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNS)
	t.Cleanup(func() { runBin(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", vmNS) })
	if row := doctorRow(t, cluster, vmNS, doctor.CheckNamespaceShared); row.Status != doctor.OK {
		t.Errorf("doctor %s alone: %s %q", doctor.CheckNamespaceShared, row.Status, row.Seen)
	}
	dyn, err := dynamic.NewForConfig(adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	vm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "e2e-shared-b-pool1-x", "labels": map[string]any{harvester.LabelGuestCluster: "e2e-shared-b"}},
		// A guest memory: Harvester's validator refuses a VM with neither it nor a memory limit.
		"spec": map[string]any{"runStrategy": "Halted", "template": map[string]any{"spec": map[string]any{"domain": map[string]any{
			"devices": map[string]any{}, "memory": map[string]any{"guest": "1Gi"}}}}},
	}}
	vms := dyn.Resource(clusterstate.GVRVM).Namespace(vmNS)
	if _, err := vms.Create(ctx, vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vms.Delete(context.WithoutCancel(ctx), vm.GetName(), metav1.DeleteOptions{}) })
	row := doctorRow(t, cluster, vmNS, doctor.CheckNamespaceShared)
	if row.Status != doctor.Warn || row.Fix == "" {
		t.Errorf("doctor %s with another cluster's VM: %s %q, want WARN naming e2e-shared-b", doctor.CheckNamespaceShared, row.Status, row.Seen)
	}
}

func ensureNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// doctorRow runs doctor -o json and returns one row.
func doctorRow(t *testing.T, cluster, ns, check string) doctor.Row {
	t.Helper()
	r := runBin(t, "doctor", "--cluster-name", cluster, "--namespace", ns, "-o", "json")
	var report struct{ Checks []doctor.Row }
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("doctor -o json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	for _, row := range report.Checks {
		if row.Check == check {
			return row
		}
	}
	t.Fatalf("doctor has no %s row:\n%s", check, r.stdout)
	return doctor.Row{}
}

// TestDriverCredentialKeepsOthersBindings (issue 30, item 8): a RoleBinding
// of another name that merely carries the driver credential's labels
// survives a re-run with fewer machine namespaces and revoke.
func TestDriverCredentialKeepsOthersBindings(t *testing.T) {
	ctx := ctxT(t)
	const other = "e2e-keep-ns4"
	ensureNamespace(t, ctx, other)
	args := []string{"--namespace", "default", "--service-account", "e2e-keep-drv"}
	mustRun(t, append([]string{"driver-credential", "--machine-namespace", "default", "--machine-namespace", other}, args...)...)
	t.Cleanup(func() { runBin(t, append([]string{"driver-credential", "revoke"}, args...)...) })
	own, err := admin.RbacV1().RoleBindings(other).Get(ctx, "harvester-bootstrap:driver:default:e2e-keep-drv", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	theirs := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses-binding", Namespace: other, Labels: own.Labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}}}
	if _, err := admin.RbacV1().RoleBindings(other).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"driver-credential", "--machine-namespace", "default"}, args...)...)
	if _, err := admin.RbacV1().RoleBindings(other).Get(ctx, own.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the credential's own RoleBinding in %s after it was dropped: %v", other, err)
	}
	mustRun(t, append([]string{"driver-credential", "revoke"}, args...)...)
	if _, err := admin.RbacV1().RoleBindings(other).Get(ctx, theirs.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's RoleBinding with the credential's labels: %v", err)
	}
}

// TestRevokeTakesTheGrantWithTheLast: the namespace's grant stays while a
// guest credential is bound there and goes with the last one.
func TestRevokeTakesTheGrantWithTheLast(t *testing.T) {
	ctx := ctxT(t)
	const vmNS = "e2e-lastgrant"
	ensureNamespace(t, ctx, vmNS)
	grant := credentials.GrantBindingName(vmNS)
	for _, c := range []string{"e2e-last-a", "e2e-last-b"} {
		mustRun(t, "kubeconfig", "--cluster-name", c, "--namespace", vmNS)
	}
	mustRun(t, "kubeconfig", "revoke", "--cluster-name", "e2e-last-a", "--namespace", vmNS)
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, grant, metav1.GetOptions{}); err != nil {
		t.Fatalf("grant of %s with e2e-last-b's credential still there: %v", vmNS, err)
	}
	mustRun(t, "kubeconfig", "revoke", "--cluster-name", "e2e-last-b", "--namespace", vmNS)
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, grant, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("grant of %s after its last credential was revoked: %v", vmNS, err)
	}
	for _, ns := range credentials.SharedNamespaces() {
		if _, err := admin.RbacV1().RoleBindings(ns).Get(ctx, grant, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("grant RoleBinding in %s after the last credential: %v", ns, err)
		}
	}
}

// TestGrantNamesOnlyTheGuests (issue 33, item 3): a ServiceAccount someone
// makes in a granted VM namespace (`kubectl create sa app`) gets nothing
// from the grant: with its token, listing or deleting another tenant's
// networkfilesystem in harvester-system is refused, while the guest's own
// token lists them. The grant's three bindings name exactly the guest
// ServiceAccounts present through kubeconfig, rotate, revoke, and the
// migration of a grant made with the namespace's group (by kubeconfig and by
// driver-credential --cloud-provider); doctor fails the group subject.
// Names are literal so the attack also runs on the code before the fix,
// where the stranger's requests succeeded.
func TestGrantNamesOnlyTheGuests(t *testing.T) {
	ctx := ctxT(t)
	const vmNS, a, b, stranger = "e2e-grantsa", "e2e-grantsa-a", "e2e-grantsa-b", "app"
	const grant = "harvester-bootstrap:guest-namespace:" + vmNS
	ensureNamespace(t, ctx, vmNS)
	for _, c := range []string{a, b} {
		t.Cleanup(func() { runBin(t, "kubeconfig", "revoke", "--cluster-name", c, "--namespace", vmNS) })
	}
	kc := tempFile(t, "grantsa")
	mustRun(t, "kubeconfig", "--cluster-name", a, "--namespace", vmNS, "-o", kc)

	nfs := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "networkfilesystems"}
	adminDyn, err := dynamic.NewForConfig(adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	victim, err := adminDyn.Resource(nfs).Namespace("harvester-system").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "harvesterhci.io/v1beta1", "kind": "NetworkFilesystem",
		"metadata": map[string]any{"generateName": "pvc-other-tenant-"}, "spec": map[string]any{"desiredState": "Enabled"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adminDyn.Resource(nfs).Namespace("harvester-system").Delete(context.WithoutCancel(ctx), victim.GetName(), metav1.DeleteOptions{})
	})
	app := strangerClient(t, ctx, vmNS, stranger)
	if _, err := app.Resource(nfs).Namespace("harvester-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("ServiceAccount %s/%s (not the tool's) lists networkfilesystems in harvester-system: want Forbidden, got %v", vmNS, stranger, err)
	}
	disabled := victim.DeepCopy()
	disabled.Object["spec"] = map[string]any{"desiredState": "Disabled"}
	if _, err := app.Resource(nfs).Namespace("harvester-system").Update(ctx, disabled, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("ServiceAccount %s/%s disables another tenant's networkfilesystem: want Forbidden, got %v", vmNS, stranger, err)
	}
	if err := app.Resource(nfs).Namespace("harvester-system").Delete(ctx, victim.GetName(), metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("ServiceAccount %s/%s deletes another tenant's networkfilesystem: want Forbidden, got %v", vmNS, stranger, err)
	}
	if _, err := adminDyn.Resource(nfs).Namespace("harvester-system").Get(ctx, victim.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("the other tenant's networkfilesystem after the refused delete: %v", err)
	}
	guestCfg, _ := guestClient(t, kc)
	guestDyn, err := dynamic.NewForConfig(guestCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guestDyn.Resource(nfs).Namespace("harvester-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the guest's own token may not list networkfilesystems (its CSI driver's RWX switch): %v", err)
	}

	expectSubjects(t, ctx, vmNS, grant, "after kubeconfig", a)
	mustRun(t, "kubeconfig", "--cluster-name", b, "--namespace", vmNS)
	expectSubjects(t, ctx, vmNS, grant, "after a second cluster's kubeconfig", a, b)
	mustRun(t, "kubeconfig", "rotate", "--cluster-name", a, "--namespace", vmNS)
	expectSubjects(t, ctx, vmNS, grant, "after rotate", a, b)
	mustRun(t, "kubeconfig", "revoke", "--cluster-name", a, "--namespace", vmNS)
	expectSubjects(t, ctx, vmNS, grant, "after revoking "+a, b)

	// A grant made before: every binding names the namespace's group.
	group := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + vmNS}}
	setOld := func() {
		t.Helper()
		crb, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, grant, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crb.Subjects = group
		if _, err := admin.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"harvester-system", "longhorn-system"} {
			rb, err := admin.RbacV1().RoleBindings(ns).Get(ctx, grant, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rb.Subjects = group
			if _, err := admin.RbacV1().RoleBindings(ns).Update(ctx, rb, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	setOld()
	if row := doctorRow(t, b, vmNS, doctor.CheckCredentialScope); row.Status != doctor.Fail || !strings.Contains(row.Seen, "group system:serviceaccounts:"+vmNS) {
		t.Errorf("doctor %s with the group subject: %s %q, want FAIL naming the group", doctor.CheckCredentialScope, row.Status, row.Seen)
	}
	mustRun(t, "kubeconfig", "--cluster-name", b, "--namespace", vmNS)
	expectSubjects(t, ctx, vmNS, grant, "kubeconfig migrating the group grant", b)
	if row := doctorRow(t, b, vmNS, doctor.CheckCredentialScope); row.Status != doctor.OK {
		t.Errorf("doctor %s after the migration: %s %q, want OK", doctor.CheckCredentialScope, row.Status, row.Seen)
	}
	setOld()
	drv := []string{"--namespace", vmNS, "--service-account", "e2e-grantsa-driver", "--cloud-provider"}
	mustRun(t, append([]string{"driver-credential"}, drv...)...)
	t.Cleanup(func() { runBin(t, append([]string{"driver-credential", "revoke"}, drv...)...) })
	expectSubjects(t, ctx, vmNS, grant, "driver-credential --cloud-provider migrating the group grant", b)
}

// expectSubjects checks that the grant's ClusterRoleBinding and its two
// RoleBindings name exactly ServiceAccounts sas of ns, in that order.
func expectSubjects(t *testing.T, ctx context.Context, ns, grant, step string, sas ...string) {
	t.Helper()
	want := []rbacv1.Subject{}
	for _, sa := range sas {
		want = append(want, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns})
	}
	crb, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, grant, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	got := map[string][]rbacv1.Subject{"ClusterRoleBinding " + grant: crb.Subjects}
	for _, shared := range []string{"harvester-system", "longhorn-system"} {
		rb, err := admin.RbacV1().RoleBindings(shared).Get(ctx, grant, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		got["RoleBinding "+shared+"/"+grant] = rb.Subjects
	}
	for name, subjects := range got {
		if !slices.Equal(subjects, want) {
			t.Errorf("%s: %s names %v, want %v", step, name, subjects, want)
		}
	}
}
