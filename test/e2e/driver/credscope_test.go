package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// TestDriverCredentialCannotTouchClusterRBAC (issue 28, point 5): the
// credential `driver-credential --cloud-provider` makes can neither give
// cluster-admin's (or any) ClusterRoleBinding an owner that does not exist
// (the garbage collector would delete it) nor bind Harvester's CSI role to
// everyone.
//
// Sequential: it revokes a credential in namespace default, and revoke
// deletes the namespace's guest grant once no credential is left there
// (credentials.DropGrantIfUnused), racing another test's credential on its
// way.
func TestDriverCredentialCannotTouchClusterRBAC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--namespace", namespace, "--service-account", "e2e-rbac-drv", "--cloud-provider"}
	kc := issueDriverCredential(t, args...)
	t.Cleanup(func() { bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...) })
	drv := clientOf(t, kc)

	victim := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-victim-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, victim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), victim.Name, metav1.DeleteOptions{})
	})

	orphan := []byte(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"gone","uid":"00000000-0000-0000-0000-000000000001"}]}}`)
	_, err := drv.RbacV1().ClusterRoleBindings().Patch(ctx, victim.Name, types.MergePatchType, orphan, metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("driver credential: ownerReferences patch of a ClusterRoleBinding: want Forbidden, got %v", err)
	}
	everyone := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-csi-for-everyone"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: harvester.CSIDriverRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}}
	if _, err := drv.RbacV1().ClusterRoleBindings().Create(ctx, everyone, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("driver credential: bind %s to system:authenticated: want Forbidden, got %v", harvester.CSIDriverRole, err)
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, everyone.Name, metav1.DeleteOptions{})
	}
	for _, verb := range []string{"get", "list", "create", "patch", "update", "delete"} {
		for _, res := range []string{"clusterrolebindings", "clusterroles"} {
			if can(t, ctx, drv, verb, "rbac.authorization.k8s.io", res, "") {
				t.Errorf("driver credential may %s %s", verb, res)
			}
		}
	}
	// The garbage collector would have acted within seconds: watch the
	// binding for a while; it is neither deleted nor given an owner.
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	defer wcancel()
	w, err := kube.RbacV1().ClusterRoleBindings().Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + victim.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		crb, ok := ev.Object.(*rbacv1.ClusterRoleBinding)
		if ev.Type == watch.Deleted || ok && len(crb.OwnerReferences) > 0 {
			t.Fatalf("cluster-admin's binding after the refused patch: %s %+v", ev.Type, ev.Object)
		}
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, victim.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("cluster-admin's binding: %v", err)
	}
}

// TestGuestTokenReadByDriverReachesOnlyItsNamespace (issue 28, point 6):
// the driver credential may read the guest tokens of its machine
// namespace; such a token, made as the driver makes it, reaches nothing in
// any other namespace.
//
// Sequential: it revokes a credential in namespace default, and revoke
// deletes the namespace's guest grant once no credential is left there
// (credentials.DropGrantIfUnused), racing another test's credential on its
// way.
func TestGuestTokenReadByDriverReachesOnlyItsNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const other, cluster = "e2e-scope-other", "e2e-scope"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	args := []string{"--namespace", namespace, "--service-account", "e2e-scope-drv", "--cloud-provider"}
	kc := issueDriverCredential(t, args...)
	t.Cleanup(func() { bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...) })
	t.Cleanup(func() { bootstrap(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", namespace) })

	// The guest credential, made with the driver's credential exactly as
	// --harvester-cloud-provider makes it.
	h, a := issueGuestAsDriver(t, ctx, kc, cluster, namespace)
	cfg := h.Config
	secret, err := h.TokenSecret(ctx, a) // read with the driver's credential
	if err != nil {
		t.Fatal(err)
	}
	guestCfg := rest.AnonymousClientConfig(cfg)
	guestCfg.BearerToken = string(secret.Data[corev1.ServiceAccountTokenKey])
	guest, err := kubernetes.NewForConfig(guestCfg)
	if err != nil {
		t.Fatal(err)
	}
	// kube-apiserver checks a Secret-held token against its own cache of
	// Secrets, which may lag the token's writing on a loaded machine (a
	// 401 then, not the 403 the attacks below must meet).
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := guest.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the guest token is not accepted: %v", err)
	}

	vm := []byte(`{"spec":{"runStrategy":"Halted"}}`)
	err = guest.CoreV1().RESTClient().Patch(types.MergePatchType).AbsPath("/apis/kubevirt.io/v1/namespaces", other, "virtualmachines", "any").Body(vm).Do(ctx).Error()
	if !apierrors.IsForbidden(err) {
		t.Errorf("guest token: patch a VM in %s: want Forbidden, got %v", other, err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "e2e-scope"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := guest.CoreV1().PersistentVolumeClaims(other).Create(ctx, pvc, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("guest token: create a PVC in %s: want Forbidden, got %v", other, err)
	}
	for _, c := range []struct{ verb, group, resource string }{
		{"patch", "kubevirt.io", "virtualmachines"}, {"get", "kubevirt.io", "virtualmachines"},
		{"create", "", "persistentvolumeclaims"}, {"get", "snapshot.storage.k8s.io", "volumesnapshots"},
		{"create", "harvesterhci.io", "volumeremoterestores"}, {"create", "loadbalancer.harvesterhci.io", "loadbalancers"},
	} {
		if can(t, ctx, guest, c.verb, c.group, c.resource, other) {
			t.Errorf("guest token made by the driver may %s %s.%s in %s", c.verb, c.resource, c.group, other)
		}
	}
	if !can(t, ctx, guest, "patch", "kubevirt.io", "virtualmachines", namespace) {
		t.Errorf("guest token may not patch VMs in its own namespace %s (the CSI driver's hot-plug)", namespace)
	}
	if strings.Contains(guestCfg.BearerToken, " ") || guestCfg.BearerToken == "" {
		t.Fatal("no guest token")
	}
}

// can asks the API server, as cs, whether it may verb the resource in ns
// ("" = cluster-wide): kubectl auth can-i.
func can(t *testing.T, ctx context.Context, cs kubernetes.Interface, verb, group, res, ns string) bool {
	t.Helper()
	review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: res}}}
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("access review %s %s: %v", verb, res, err)
	}
	return r.Status.Allowed
}
