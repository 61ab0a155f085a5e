package drivercred

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/golden"
)

var testSpec = Spec{Namespace: "default", MachineNamespaces: []string{"team-b", "default", "team-b"}, CloudProvider: true}.WithDefaults()

func TestBuildGolden(t *testing.T) {
	o := Build(testSpec)
	objs := []runtime.Object{o.Policy, o.PolicyBinding, o.ServiceAccount, o.ClusterRole, o.ClusterRoleBinding}
	for i := range o.Roles {
		objs = append(objs, o.Roles[i], o.RoleBindings[i])
	}
	golden.Assert(t, "driver-credential.yaml", golden.Must(addons.EncodeYAML(append(objs, o.TokenSecret))))
}

func TestSpecValidate(t *testing.T) {
	if err := testSpec.Validate(); err != nil {
		t.Fatal(err)
	}
	err := Spec{ServiceAccount: "Bad_Name", MachineNamespaces: []string{"ok", "Not OK"}}.Validate()
	for _, want := range []string{`driver service account "Bad_Name": must be a DNS-1123 label`, "driver namespace: required", `machine namespace "Not OK"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if got := (Spec{Namespace: "a", MachineNamespaces: []string{"c", "b", "c"}}).WithDefaults().MachineNamespaces; strings.Join(got, ",") != "b,c" {
		t.Errorf("machine namespaces %v", got)
	}
}

// namespaces the test credential uses, as Harvester has them.
func namespaces(names ...string) []runtime.Object {
	var out []runtime.Object
	for _, n := range names {
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return out
}

func newTest(t *testing.T, objs ...runtime.Object) (*Harvester, *fake.Clientset, context.Context) {
	cs := fake.NewClientset(append(namespaces("default", "team-b", "harvester-system", "longhorn-system"), objs...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return &Harvester{Kube: cs, Log: slog.New(slog.DiscardHandler)}, cs, ctx
}

func TestEnsureIdempotentAndPrunes(t *testing.T) {
	h, cs, ctx := newTest(t)
	for range 2 {
		if err := h.Ensure(ctx, testSpec); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"default", "team-b"} {
		if _, err := cs.RbacV1().Roles(ns).Get(ctx, testSpec.RBACName(), metav1.GetOptions{}); err != nil {
			t.Errorf("Role in %s: %v", ns, err)
		}
	}
	fewer := testSpec
	fewer.MachineNamespaces = []string{"default"}
	if err := h.Ensure(ctx, fewer); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("team-b").Get(ctx, testSpec.RBACName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding in team-b after it was dropped: %v", err)
	}
	if _, err := cs.RbacV1().Roles("default").Get(ctx, testSpec.RBACName(), metav1.GetOptions{}); err != nil {
		t.Errorf("Role in default: %v", err)
	}
}

func TestEnsureRefusesObjectsItDidNotCreate(t *testing.T) {
	theirs := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: testSpec.ServiceAccount, Namespace: "default"}}
	h, cs, ctx := newTest(t, theirs)
	err := h.Ensure(ctx, testSpec)
	if err == nil || !strings.Contains(err.Error(), "ServiceAccount default/docker-machine-driver-harvester exists and was not created by harvester-bootstrap driver-credential") {
		t.Fatalf("error %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, testSpec.RBACName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused Ensure created the ClusterRole: %v", err)
	}
	if _, err := h.Revoke(ctx, testSpec); err == nil || !strings.Contains(err.Error(), "left untouched") {
		t.Errorf("revoke of a foreign ServiceAccount: %v", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, testSpec.ServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("revoke deleted the foreign ServiceAccount: %v", err)
	}
}

func TestRevokeDeletesEverything(t *testing.T) {
	h, cs, ctx := newTest(t)
	if err := h.Ensure(ctx, testSpec); err != nil {
		t.Fatal(err)
	}
	// Revoke with the namespaces forgotten (and without --cloud-provider)
	// still finds the Roles and the grant policy's bindings by label.
	forgot := Spec{Namespace: "default"}.WithDefaults()
	r, err := h.Revoke(ctx, forgot)
	if err != nil {
		t.Fatal(err)
	}
	if deleted := r.Deleted; len(deleted) != 13 {
		t.Errorf("deleted %d objects, want 13 (10, and the grant policy with its binding for each of the two machine namespaces): %v", len(deleted), deleted)
	}
	sel := metav1.ListOptions{LabelSelector: testSpec.Selector()}
	roles, _ := cs.RbacV1().Roles("").List(ctx, sel)
	sas, _ := cs.CoreV1().ServiceAccounts("").List(ctx, sel)
	crs, _ := cs.RbacV1().ClusterRoles().List(ctx, sel)
	if len(roles.Items)+len(sas.Items)+len(crs.Items) != 0 {
		t.Errorf("left: %d roles, %d service accounts, %d cluster roles", len(roles.Items), len(sas.Items), len(crs.Items))
	}
	if r, err := h.Revoke(ctx, forgot); err != nil || len(r.Deleted) != 0 {
		t.Errorf("second revoke: %v %v", r.Deleted, err)
	}
}

func TestRotateNeedsTheCredential(t *testing.T) {
	h, _, ctx := newTest(t)
	if err := h.Rotate(ctx, testSpec); err == nil || !strings.Contains(err.Error(), "run `driver-credential` first") {
		t.Errorf("rotate without a credential: %v", err)
	}
}

// TestEnsureChecksNamespacesFirst: a machine namespace that does not exist
// is named before anything is made (the Role would fail after the
// ServiceAccount and its never-expiring token existed).
func TestEnsureChecksNamespacesFirst(t *testing.T) {
	h, cs, ctx := newTest(t)
	s := testSpec
	s.MachineNamespaces = []string{"default", "no-such-ns"}
	err := h.Ensure(ctx, s)
	if err == nil || !strings.Contains(err.Error(), `machine namespace "no-such-ns": no such namespace`) {
		t.Fatalf("error %v", err)
	}
	sas, _ := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	crs, _ := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if len(sas.Items)+len(crs.Items) != 0 {
		t.Errorf("a refused Ensure made %d service accounts and %d cluster roles", len(sas.Items), len(crs.Items))
	}
}

// TestEnsureRemovesWhatAFailedRunMade: an apply failing halfway leaves
// nothing this run created.
func TestEnsureRemovesWhatAFailedRunMade(t *testing.T) {
	h, cs, ctx := newTest(t)
	cs.PrependReactor("patch", "rolebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, "x", errors.New("denied"))
	})
	if err := h.Ensure(ctx, testSpec); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("error %v", err)
	}
	sel := metav1.ListOptions{LabelSelector: testSpec.Selector()}
	sas, _ := cs.CoreV1().ServiceAccounts("").List(ctx, sel)
	crs, _ := cs.RbacV1().ClusterRoles().List(ctx, sel)
	roles, _ := cs.RbacV1().Roles("").List(ctx, sel)
	if n := len(sas.Items) + len(crs.Items) + len(roles.Items); n != 0 {
		t.Errorf("a failed Ensure left %d objects", n)
	}
}

// TestPruneAndRevokeKeepOthersObjects: a Role or RoleBinding of another
// name, or binding another subject, is never deleted, even when it carries
// the credential's labels.
func TestPruneAndRevokeKeepOthersObjects(t *testing.T) {
	labels := testSpec.Labels()
	theirs := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses-binding", Namespace: "team-b", Labels: labels},
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: testSpec.RBACName()}}
	theirRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "their-role", Namespace: "team-b", Labels: labels}}
	h, cs, ctx := newTest(t, theirs, theirRole)
	fewer := testSpec
	fewer.MachineNamespaces = []string{"default"}
	if err := h.Ensure(ctx, fewer); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Revoke(ctx, fewer); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("team-b").Get(ctx, theirs.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("their RoleBinding: %v", err)
	}
	if _, err := cs.RbacV1().Roles("team-b").Get(ctx, theirRole.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("their Role: %v", err)
	}
}

// TestHandlesHaveClients: every kind of the credential maps to a client
// (restapi.NamedOf), and each handle names its object.
func TestHandlesHaveClients(t *testing.T) {
	h, _, _ := newTest(t)
	for _, x := range h.handles(testSpec) {
		if x.Get == nil || x.Patch == nil || x.Delete == nil || x.Watch.List == nil {
			t.Errorf("%s %s: no client", x.Kind, x.Name)
		}
		if x.Name == "" || x.Kind == "" {
			t.Errorf("handle without kind or name: %+v", x.Named)
		}
	}
}
