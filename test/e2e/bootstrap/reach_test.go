package bootstrap_test

import (
	"context"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// TestWideTokenNeverWhereADriverReads (issue 33, item 2): a driver
// credential may read every Secret of its machine namespaces, so a token
// reaching outside the namespace must never be there. driver-credential
// refuses a namespace holding one (a --csi-cluster-wide guest credential,
// or anyone's token bound by a ClusterRoleBinding), `kubeconfig
// --csi-cluster-wide` refuses a namespace a driver credential serves, and
// doctor fails a token reaching outside and a guest role bound by anyone
// but the tool. Names are literal so the test also runs on the code
// before the fix (where every refusal was missing).
func TestWideTokenNeverWhereADriverReads(t *testing.T) {
	ctx := ctxT(t)
	const vmNS, drvNS, wide, wide2, confined = "e2e-reach-vms", "e2e-reach-drv", "e2e-reach-wide", "e2e-reach-wide2", "e2e-reach-ok"
	const gate = "driver-credential-gate"
	ensureNamespace(t, ctx, vmNS)
	ensureNamespace(t, ctx, drvNS)
	drv := []string{"--namespace", drvNS, "--service-account", "e2e-reach-drv", "--machine-namespace", vmNS}
	t.Cleanup(func() {
		runBin(t, append([]string{"driver-credential", "revoke"}, drv...)...)
		for _, c := range []string{wide, wide2, confined} {
			runBin(t, "kubeconfig", "revoke", "--cluster-name", c, "--namespace", vmNS)
		}
	})

	mustRun(t, "kubeconfig", "--cluster-name", wide, "--namespace", vmNS, "--csi-cluster-wide")
	r := runBin(t, append([]string{"driver-credential"}, drv...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "--machine-namespace") || !strings.Contains(r.stderr, vmNS+"/"+wide+"-token") || !strings.Contains(r.stderr, "kubeconfig rotate") {
		t.Errorf("driver-credential on a namespace with a cluster-wide guest token: exit %d, want a refusal naming --machine-namespace, the token Secret and the fix:\n%s", r.code, r.stderr)
	}
	if _, err := admin.CoreV1().ServiceAccounts(drvNS).Get(ctx, "e2e-reach-drv", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused driver-credential made its ServiceAccount: %v", err)
	}

	// Confined, the namespace may be served; then no cluster-wide
	// credential may come into it.
	mustRun(t, "kubeconfig", "rotate", "--cluster-name", wide, "--namespace", vmNS)
	mustRun(t, append([]string{"driver-credential"}, drv...)...)
	r = runBin(t, "kubeconfig", "--cluster-name", wide2, "--namespace", vmNS, "--csi-cluster-wide")
	if r.code == 0 || !strings.Contains(r.stderr, "--csi-cluster-wide") || !strings.Contains(r.stderr, drvNS+"/e2e-reach-drv") {
		t.Errorf("kubeconfig --csi-cluster-wide into a served namespace: exit %d, want a refusal naming --csi-cluster-wide and the driver credential:\n%s", r.code, r.stderr)
	}
	if _, err := admin.CoreV1().ServiceAccounts(vmNS).Get(ctx, wide2, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused kubeconfig made its ServiceAccount: %v", err)
	}
	mustRun(t, "kubeconfig", "--cluster-name", confined, "--namespace", vmNS)
	if row := doctorRow(t, confined, vmNS, gate); row.Status != "OK" {
		t.Errorf("doctor %s: %s %q, want OK", gate, row.Status, row.Seen)
	}

	// Someone else binds the CSI role to everyone: doctor fails.
	everyone := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-reach-csi-everyone"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "harvesterhci.io:csi-driver"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}}
	if _, err := admin.RbacV1().RoleBindings(vmNS).Create(ctx, everyone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if row := doctorRow(t, confined, vmNS, gate); row.Status != "FAIL" || !strings.Contains(row.Seen, everyone.Name) {
		t.Errorf("doctor %s with %s: %s %q, want FAIL naming it", gate, everyone.Name, row.Status, row.Seen)
	}
	if err := admin.RbacV1().RoleBindings(vmNS).Delete(ctx, everyone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Someone else's token, bound cluster-wide: doctor fails, and a
	// re-run of driver-credential refuses.
	op := "e2e-reach-operator"
	if _, err := admin.CoreV1().ServiceAccounts(vmNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: op}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: op + "-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: op}}, Type: corev1.SecretTypeServiceAccountToken}
	if _, err := admin.CoreV1().Secrets(vmNS).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-reach-operator-view"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: op, Namespace: vmNS}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{})
		_ = admin.CoreV1().Secrets(vmNS).Delete(ctx, sec.Name, metav1.DeleteOptions{})
		_ = admin.CoreV1().ServiceAccounts(vmNS).Delete(ctx, op, metav1.DeleteOptions{})
	})
	if row := doctorRow(t, confined, vmNS, gate); row.Status != "FAIL" || !strings.Contains(row.Seen, vmNS+"/"+sec.Name) {
		t.Errorf("doctor %s with %s: %s %q, want FAIL naming it", gate, sec.Name, row.Status, row.Seen)
	}
	r = runBin(t, append([]string{"driver-credential"}, drv...)...)
	if r.code == 0 || !strings.Contains(r.stderr, vmNS+"/"+sec.Name) || !strings.Contains(r.stderr, crb.Name) {
		t.Errorf("driver-credential with %s bound cluster-wide in its namespace: exit %d, want a refusal naming it and %s:\n%s", sec.Name, r.code, crb.Name, r.stderr)
	}
}

// TestNoRWXKeepsOthersOffTheNFS (issue 33, item 3): with the namespace
// grant as Harvester grants the CSI driver's rights, the guest's own token
// may delete another tenant's networkfilesystem (the documented reach), a
// ServiceAccount the tool never made in the namespace may not (the grant
// names only the guests); `kubeconfig --no-rwx` leaves those rights out:
// the same requests are refused, while the grant's other reads stay.
func TestNoRWXKeepsOthersOffTheNFS(t *testing.T) {
	ctx := ctxT(t)
	const vmNS, cluster, app = "e2e-norwx", "e2e-norwx-a", "e2e-norwx-app"
	ensureNamespace(t, ctx, vmNS)
	t.Cleanup(func() { runBin(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", vmNS) })
	appDyn := strangerClient(t, ctx, vmNS, app)
	adminDyn, err := dynamic.NewForConfig(adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	nfs := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "networkfilesystems"}
	victim := func() string {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "harvesterhci.io/v1beta1", "kind": "NetworkFilesystem",
			"metadata": map[string]any{"generateName": "pvc-other-tenant-"}, "spec": map[string]any{"desiredState": "Enabled"}}}
		got, err := adminDyn.Resource(nfs).Namespace("harvester-system").Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = adminDyn.Resource(nfs).Namespace("harvester-system").Delete(context.WithoutCancel(ctx), got.GetName(), metav1.DeleteOptions{})
		})
		return got.GetName()
	}

	kc := tempFile(t, "rwx")
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNS, "-o", kc)
	name := victim()
	guestCfg, guestCS := guestClient(t, kc)
	guestDyn, err := dynamic.NewForConfig(guestCfg)
	if err != nil {
		t.Fatal(err)
	}
	nfsDelete := authzv1.ResourceAttributes{Namespace: "harvester-system", Verb: "delete", Group: nfs.Group, Resource: nfs.Resource}
	if err := simtest.WaitAuthorized(ctx, guestCS, nfsDelete, true); err != nil {
		t.Fatal(err)
	}
	if err := appDyn.Resource(nfs).Namespace("harvester-system").Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("with the full grant, %s (not the tool's) deletes another tenant's networkfilesystem: want Forbidden, got %v", app, err)
	}
	if err := guestDyn.Resource(nfs).Namespace("harvester-system").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("with the full grant, the guest's token could not delete another tenant's networkfilesystem (the reach the docs state): %v", err)
	}

	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNS, "--no-rwx", "-o", kc)
	if err := simtest.WaitAuthorized(ctx, guestCS, nfsDelete, false); err != nil {
		t.Fatal(err)
	}
	name = victim()
	for who, c := range map[string]dynamic.Interface{app: appDyn, "the guest's token": guestDyn} {
		if err := c.Resource(nfs).Namespace("harvester-system").Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("--no-rwx: %s deletes another tenant's networkfilesystem: want Forbidden, got %v", who, err)
		}
		if _, err := c.Resource(nfs).Namespace("harvester-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("--no-rwx: %s lists networkfilesystems (the CSI driver's RWX switch): want Forbidden, got %v", who, err)
		}
	}
	if _, err := adminDyn.Resource(nfs).Namespace("harvester-system").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("the other tenant's networkfilesystem after the refused delete: %v", err)
	}
	lh := schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}
	if _, err := guestDyn.Resource(lh).Namespace("longhorn-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("--no-rwx: the guest may no longer list Longhorn volumes (the grant's other part): %v", err)
	}
}

// strangerClient makes ServiceAccount name in ns as `kubectl create sa`
// does (no label of the tool) and returns a client with its token.
func strangerClient(t *testing.T, ctx context.Context, ns, name string) dynamic.Interface {
	t.Helper()
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().ServiceAccounts(ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
	})
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(adminCfg)
	cfg.BearerToken = tr.Status.Token
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
