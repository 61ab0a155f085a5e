package driver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
)

// grantSubjects are the subjects of ns's grant binding in each place (the
// ClusterRoleBinding, and the RoleBindings in harvester-system and
// longhorn-system), by where.
func grantSubjects(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) map[string][]rbacv1.Subject {
	t.Helper()
	name := "harvester-bootstrap:guest-namespace:" + ns
	crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("grant of %s: %v", ns, err)
	}
	out := map[string][]rbacv1.Subject{"ClusterRoleBinding": crb.Subjects}
	for _, shared := range []string{"harvester-system", "longhorn-system"} {
		rb, err := cs.RbacV1().RoleBindings(shared).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("grant of %s in %s: %v", ns, shared, err)
		}
		out["RoleBinding in "+shared] = rb.Subjects
	}
	return out
}

// checkGrantNames: every binding of ns's grant names exactly
// ServiceAccounts sas of ns.
func checkGrantNames(t *testing.T, ctx context.Context, ns, step string, sas ...string) {
	t.Helper()
	var want []rbacv1.Subject
	for _, sa := range sas {
		want = append(want, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns})
	}
	for where, got := range grantSubjects(t, ctx, kube, ns) {
		if !slices.Equal(got, want) {
			t.Errorf("%s: the grant's %s names %v, want %v", step, where, got, want)
		}
	}
}

// TestDriverAddsItsGuestToTheGrant (issue 33, item 3): the grant names only
// guest ServiceAccounts, so the driver with the credential of
// `driver-credential --cloud-provider` adds the one it makes, as
// --harvester-cloud-provider does (credentials.AddToGrant). With that
// credential's token, every other change of the grant's bindings is
// refused: naming a group, a ServiceAccount of another namespace or one of
// the namespace that is no guest's, changing roleRef or ownerReferences,
// making a binding of a grant's name elsewhere, deleting one. Revoking the
// guest credential takes its ServiceAccount out; revoking the driver
// credential removes its grant policy.
func TestDriverAddsItsGuestToTheGrant(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const vmNS, cluster, stranger = "e2e-dgrant", "e2e-dgrant-a", "app"
	grant := "harvester-bootstrap:guest-namespace:" + vmNS
	mustNamespace(t, ctx, vmNS)
	args := []string{"--namespace", vmNS, "--service-account", "e2e-dgrant-drv", "--cloud-provider"}
	kc := issueDriverCredential(t, args...)
	t.Cleanup(func() { bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...) })
	t.Cleanup(func() { bootstrap(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", vmNS) })
	checkGrantNames(t, ctx, vmNS, "driver-credential with no guest yet")

	h, a := issueGuestAsDriver(t, ctx, kc, cluster, vmNS)
	if err := h.AddToGrant(ctx, vmNS, a.ServiceAccount); err != nil {
		t.Fatalf("the driver credential adds its guest ServiceAccount to the grant: %v", err)
	}
	checkGrantNames(t, ctx, vmNS, "after the driver added its guest", cluster)

	if _, err := kube.CoreV1().ServiceAccounts(vmNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: stranger}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ServiceAccounts(vmNS).Delete(context.Background(), stranger, metav1.DeleteOptions{})
	})
	drv := clientOf(t, kc)
	guest := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: cluster, Namespace: vmNS}
	subjects := func(extra rbacv1.Subject) []byte {
		b, _ := json.Marshal(map[string]any{"subjects": []rbacv1.Subject{guest, extra}})
		return b
	}
	for what, extra := range map[string]rbacv1.Subject{
		"a group":                               {Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"},
		"the namespace's group":                 {Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + vmNS},
		"a ServiceAccount of another namespace": {Kind: rbacv1.ServiceAccountKind, Name: cluster, Namespace: "default"},
		"a ServiceAccount that is no guest's":   {Kind: rbacv1.ServiceAccountKind, Name: stranger, Namespace: vmNS},
		"a user":                                {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"},
	} {
		_, err := drv.RbacV1().ClusterRoleBindings().Patch(ctx, grant, types.MergePatchType, subjects(extra), metav1.PatchOptions{})
		refused(t, "name "+what+" in the grant's ClusterRoleBinding", err)
		_, err = drv.RbacV1().RoleBindings("harvester-system").Patch(ctx, grant, types.MergePatchType, subjects(extra), metav1.PatchOptions{})
		refused(t, "name "+what+" in the grant's RoleBinding in harvester-system", err)
	}
	roleRef := []byte(`{"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}`)
	if _, err := drv.RbacV1().ClusterRoleBindings().Patch(ctx, grant, types.MergePatchType, roleRef, metav1.PatchOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("driver credential: change the grant's roleRef: want Forbidden or Invalid, got %v", err)
	}
	orphan := []byte(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"gone","uid":"00000000-0000-0000-0000-000000000001"}]}}`)
	_, err := drv.RbacV1().ClusterRoleBindings().Patch(ctx, grant, types.MergePatchType, orphan, metav1.PatchOptions{})
	refused(t, "give the grant's ClusterRoleBinding an owner that does not exist", err)
	relabel := []byte(`{"metadata":{"labels":{"harvester-bootstrap.harvesterhci.io/guest-namespace":null}}}`)
	_, err = drv.RbacV1().RoleBindings("longhorn-system").Patch(ctx, grant, types.MergePatchType, relabel, metav1.PatchOptions{})
	refused(t, "drop the grant's label", err)
	elsewhere := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: grant, Namespace: "kube-system"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: credentials.GuestReadsRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}}
	body, _ := json.Marshal(elsewhere)
	_, err = drv.RbacV1().RoleBindings("kube-system").Patch(ctx, grant, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "attack"})
	refused(t, "make a binding of the grant's name in kube-system (server-side apply)", err)
	refused(t, "delete the grant's ClusterRoleBinding", drv.RbacV1().ClusterRoleBindings().Delete(ctx, grant, metav1.DeleteOptions{}))
	checkGrantNames(t, ctx, vmNS, "after the refused changes", cluster)
	crb, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, grant, metav1.GetOptions{})
	if err != nil || len(crb.OwnerReferences) > 0 || crb.RoleRef.Name != credentials.GuestReadsRole {
		t.Errorf("the grant's ClusterRoleBinding after the refused changes: %v %+v", err, crb)
	}

	id := credentials.DriverIdentity{Namespace: vmNS, ServiceAccount: "e2e-dgrant-drv"}
	if r := doctorRow(t, cluster, vmNS, doctor.CheckDriverGate); !strings.HasPrefix(r, "OK ") {
		t.Errorf("doctor %s with the grant policy: %q, want OK", doctor.CheckDriverGate, r)
	}
	if err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, id.GrantPolicyBindingName(vmNS), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := doctorRow(t, cluster, vmNS, doctor.CheckDriverGate); !strings.HasPrefix(r, "FAIL ") || !strings.Contains(r, id.GrantPolicyBindingName(vmNS)) {
		t.Errorf("doctor %s without the grant policy's binding: %q, want FAIL naming it", doctor.CheckDriverGate, r)
	}
	issueDriverCredential(t, args...) // puts it back

	bootstrap(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", vmNS)
	checkGrantNames(t, ctx, vmNS, "after the guest credential's revoke")
	bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...)
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, id.GrantPolicyName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the grant policy after driver-credential revoke: %v", err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, id.GrantPolicyBindingName(vmNS), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the grant policy's binding after driver-credential revoke: %v", err)
	}
}
