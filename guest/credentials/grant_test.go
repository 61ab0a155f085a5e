package credentials

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

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
	a, b := BuildGrant("ns-a", GrantOptions{}), BuildGrant("ns-b", GrantOptions{})
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
	g := BuildGrant("ns-a", GrantOptions{NoRWX: true})
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
