package drivercred

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/golden"
)

var testSpec = Spec{Namespace: "default", MachineNamespaces: []string{"team-b", "default", "team-b"}, CloudProvider: true}.WithDefaults()

func TestBuildGolden(t *testing.T) {
	o := Build(testSpec)
	objs := []runtime.Object{o.ServiceAccount, o.ClusterRole, o.ClusterRoleBinding}
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

func newTest(t *testing.T, objs ...runtime.Object) (*Harvester, *fake.Clientset, context.Context) {
	cs := fake.NewClientset(objs...)
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
	// Revoke with the namespaces forgotten still finds the Roles by label.
	forgot := Spec{Namespace: "default"}.WithDefaults()
	deleted, err := h.Revoke(ctx, forgot)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 8 {
		t.Errorf("deleted %d objects, want 8: %v", len(deleted), deleted)
	}
	sel := metav1.ListOptions{LabelSelector: testSpec.Selector()}
	roles, _ := cs.RbacV1().Roles("").List(ctx, sel)
	sas, _ := cs.CoreV1().ServiceAccounts("").List(ctx, sel)
	crs, _ := cs.RbacV1().ClusterRoles().List(ctx, sel)
	if len(roles.Items)+len(sas.Items)+len(crs.Items) != 0 {
		t.Errorf("left: %d roles, %d service accounts, %d cluster roles", len(roles.Items), len(sas.Items), len(crs.Items))
	}
	if deleted, err := h.Revoke(ctx, forgot); err != nil || len(deleted) != 0 {
		t.Errorf("second revoke: %v %v", deleted, err)
	}
}

func TestRotateNeedsTheCredential(t *testing.T) {
	h, _, ctx := newTest(t)
	if err := h.Rotate(ctx, testSpec); err == nil || !strings.Contains(err.Error(), "run `driver-credential` first") {
		t.Errorf("rotate without a credential: %v", err)
	}
}
