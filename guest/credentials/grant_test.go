package credentials

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// TestDropGrantIfUnused: a namespace's grant stays while a credential of
// this tool is bound there and goes with the last one; the shared roles go
// with the last grant; an object of a grant's name that is not this tool's
// is never deleted.
func TestDropGrantIfUnused(t *testing.T) {
	a, b := BuildGrant("ns-a", GrantOptions{}, nil), BuildGrant("ns-b", GrantOptions{}, nil)
	objs := append(a.List(), b.ReadsBinding)
	for _, rb := range b.SharedGrants {
		objs = append(objs, rb)
	}
	guest := BuildAccess(Access{ClusterName: "g", Namespace: "ns-a"}.WithDefaults()).RoleBinding
	foreign := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: GrantBindingName("ns-c"), Namespace: "harvester-system"}}
	kube := fake.NewClientset(append(objs, guest, foreign)...)
	h := &Harvester{Client: restapifake.Clients{Kube: kube}, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if got, err := h.DropGrantIfUnused(ctx, "ns-a"); err != nil || len(got) != 0 {
		t.Fatalf("with a guest credential bound in ns-a: deleted %v, %v", got, err)
	}
	if err := kube.RbacV1().RoleBindings("ns-a").Delete(ctx, guest.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := h.DropGrantIfUnused(ctx, "ns-a")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ClusterRoleBinding " + GrantBindingName("ns-a"), "RoleBinding harvester-system/" + GrantBindingName("ns-a"), "RoleBinding longhorn-system/" + GrantBindingName("ns-a")}
	if !slices.Equal(got, want) {
		t.Errorf("ns-a's last credential gone: deleted %v, want %v (ns-b's grant keeps the shared roles)", got, want)
	}
	if got, err = h.DropGrantIfUnused(ctx, "ns-b"); err != nil || len(got) != 6 {
		t.Errorf("the last grant: deleted %v, %v; want its 3 bindings and the 3 shared roles", got, err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, GuestReadsRole, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("shared ClusterRole after the last grant: %v", err)
	}
	if _, err := kube.RbacV1().RoleBindings("harvester-system").Get(ctx, foreign.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("an unlabelled RoleBinding of a grant's name: %v", err)
	}
}

// TestGrantWithoutRWX: --no-rwx leaves the namespace no binding in
// harvester-system (networkfilesystems only) and keeps the others; on a
// namespace granted before, it deletes that binding.
func TestGrantWithoutRWX(t *testing.T) {
	g := BuildGrant("ns-a", GrantOptions{NoRWX: true}, nil)
	for _, b := range g.SharedGrants {
		if b.Namespace == "harvester-system" {
			t.Errorf("--no-rwx grant binds %s/%s", b.Namespace, b.Name)
		}
	}
	if len(g.SharedGrants) != 1 || g.SharedGrants[0].Namespace != "longhorn-system" {
		t.Errorf("--no-rwx grant bindings: %v", g.SharedGrants)
	}
	kube := fake.NewClientset()
	h := &Harvester{Client: restapifake.Clients{Kube: kube}, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.EnsureGrant(ctx, "ns-a", GrantOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings("harvester-system").Get(ctx, GrantBindingName("ns-a"), metav1.GetOptions{}); err != nil {
		t.Fatalf("the full grant's harvester-system binding: %v", err)
	}
	if err := h.EnsureGrant(ctx, "ns-a", GrantOptions{NoRWX: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings("harvester-system").Get(ctx, GrantBindingName("ns-a"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("harvester-system binding after --no-rwx: %v", err)
	}
	if _, err := kube.RbacV1().RoleBindings("longhorn-system").Get(ctx, GrantBindingName("ns-a"), metav1.GetOptions{}); err != nil {
		t.Errorf("longhorn-system binding after --no-rwx: %v", err)
	}
}

// saOf is a ServiceAccount of ns with labels.
func saOf(ns, name string, labels map[string]string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
}

// TestGrantSubjects: the grant names each guest ServiceAccount of its
// namespace, sorted, and nothing else: not one someone made there
// (`kubectl create sa app`), not one with only the managed-by label, not a
// guest of another namespace, never the namespace's group.
func TestGrantSubjects(t *testing.T) {
	guest := func(cluster string) map[string]string {
		return map[string]string{"app.kubernetes.io/managed-by": "harvester-bootstrap", "harvester-bootstrap.harvesterhci.io/guest-cluster": cluster}
	}
	sas := []corev1.ServiceAccount{
		*saOf("vms", "zeta", guest("zeta")),
		*saOf("vms", "app", nil),
		*saOf("vms", "half", map[string]string{"app.kubernetes.io/managed-by": "harvester-bootstrap"}),
		*saOf("other", "alpha", guest("alpha")),
		*saOf("vms", "beta", guest("beta")),
	}
	want := []rbacv1.Subject{
		{Kind: "ServiceAccount", Name: "beta", Namespace: "vms"},
		{Kind: "ServiceAccount", Name: "zeta", Namespace: "vms"},
	}
	if got := GrantSubjects("vms", sas); !slices.Equal(got, want) {
		t.Errorf("GrantSubjects = %v, want %v", got, want)
	}
	if got := GrantSubjects("vms", nil); got == nil || len(got) != 0 {
		t.Errorf("no guest: %#v, want an empty list", got)
	}
	foreign := ForeignGrantSubjects("vms", []rbacv1.Subject{
		{Kind: "Group", Name: "system:serviceaccounts:vms"},
		{Kind: "ServiceAccount", Name: "beta", Namespace: "vms"},
		{Kind: "ServiceAccount", Name: "app", Namespace: "vms"},
		{Kind: "ServiceAccount", Name: "beta", Namespace: "other"},
		{Kind: "User", Name: "mallory"},
	}, []string{"beta", "zeta"})
	wantForeign := []string{"group system:serviceaccounts:vms", "ServiceAccount vms/app that is no guest credential of harvester-bootstrap",
		"ServiceAccount other/beta of another namespace", "user mallory"}
	if !slices.Equal(foreign, wantForeign) {
		t.Errorf("ForeignGrantSubjects = %q, want %q", foreign, wantForeign)
	}
}

// TestGrantSubjectsInStep: make, add (the driver's call), migrate from the
// group subject and revoke keep the three bindings naming exactly the guest
// ServiceAccounts present.
func TestGrantSubjectsInStep(t *testing.T) {
	a := BuildAccess(Access{ClusterName: "a", Namespace: "vms"}.WithDefaults())
	old := BuildGrant("vms", GrantOptions{}, []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:vms"}})
	objs := append(old.List(), a.ServiceAccount, a.RoleBinding, saOf("vms", "app", nil))
	kube := fake.NewClientset(objs...)
	h := &Harvester{Client: restapifake.Clients{Kube: kube}, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subjectsOf := func(names ...string) []rbacv1.Subject {
		out := []rbacv1.Subject{}
		for _, n := range names {
			out = append(out, rbacv1.Subject{Kind: "ServiceAccount", Name: n, Namespace: "vms"})
		}
		return out
	}
	check := func(step string, want []rbacv1.Subject) {
		t.Helper()
		crb, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, GrantBindingName("vms"), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !slices.Equal(crb.Subjects, want) {
			t.Errorf("%s: ClusterRoleBinding subjects %v, want %v", step, crb.Subjects, want)
		}
		for _, ns := range SharedNamespaces() {
			rb, err := kube.RbacV1().RoleBindings(ns).Get(ctx, GrantBindingName("vms"), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if !slices.Equal(rb.Subjects, want) {
				t.Errorf("%s: RoleBinding %s subjects %v, want %v", step, ns, rb.Subjects, want)
			}
		}
	}
	if err := h.EnsureGrant(ctx, "vms", GrantOptions{}); err != nil {
		t.Fatal(err)
	}
	check("migrated from the group", subjectsOf("a"))

	b := BuildAccess(Access{ClusterName: "b", Namespace: "vms"}.WithDefaults())
	for _, o := range []*corev1.ServiceAccount{b.ServiceAccount} {
		if _, err := kube.CoreV1().ServiceAccounts("vms").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.AddToGrant(ctx, "vms", "b"); err != nil {
		t.Fatal(err)
	}
	check("added by the driver", subjectsOf("a", "b"))
	if err := h.AddToGrant(ctx, "vms", "b"); err != nil {
		t.Fatal(err)
	}
	check("added twice", subjectsOf("a", "b"))

	if err := kube.CoreV1().ServiceAccounts("vms").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := h.DropGrantIfUnused(ctx, "vms"); err != nil || len(got) != 0 {
		t.Fatalf("with a's RoleBinding left: deleted %v, %v", got, err)
	}
	check("a revoked", subjectsOf("b"))

	if err := h.AddToGrant(ctx, "none", "x"); !errors.Is(err, ErrGrantMissing) {
		t.Errorf("AddToGrant without a grant: %v, want ErrGrantMissing", err)
	}
}

// TestGrantPolicyBindsEachMachineNamespace: the grant policy applies to the
// driver's requests only, and each machine namespace's binding matches that
// namespace's grant bindings by name (everywhere) and reads that
// namespace's ServiceAccounts, refusing when there is none.
func TestGrantPolicyBindsEachMachineNamespace(t *testing.T) {
	d := DriverIdentity{Namespace: "drv", ServiceAccount: "sa"}
	policy, bindings := BuildGrantPolicy(d, []string{"vms-a", "vms-b"}, nil)
	if c := policy.Spec.MatchConditions; len(c) != 1 || c[0].Expression != `request.userInfo.username == "system:serviceaccount:drv:sa"` {
		t.Errorf("match conditions %v", c)
	}
	if len(bindings) != 2 {
		t.Fatalf("%d bindings, want one per machine namespace", len(bindings))
	}
	for i, ns := range []string{"vms-a", "vms-b"} {
		b := bindings[i].Spec
		rules := b.MatchResources.ResourceRules
		if b.PolicyName != policy.Name || b.ParamRef.Namespace != ns || *b.ParamRef.ParameterNotFoundAction != "Deny" ||
			b.MatchResources.NamespaceSelector != nil || len(rules) != 1 || !slices.Equal(rules[0].ResourceNames, []string{"harvester-bootstrap:guest-namespace:" + ns}) ||
			!slices.Equal(rules[0].Resources, []string{"rolebindings", "clusterrolebindings"}) {
			t.Errorf("binding for %s: %+v", ns, b)
		}
	}
}
