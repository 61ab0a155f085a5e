package credentials

import (
	"encoding/base64"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDriverIdentityOfToken(t *testing.T) {
	jwt := func(payload string) string {
		enc := base64.RawURLEncoding.EncodeToString
		return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
	}
	id, ok := DriverIdentityOfToken(jwt(`{"iss":"kubernetes/serviceaccount","sub":"system:serviceaccount:drivers:dmdh"}`))
	if !ok || id != (DriverIdentity{Namespace: "drivers", ServiceAccount: "dmdh"}) {
		t.Errorf("identity %+v %v", id, ok)
	}
	// The label value and user name, written out by hand.
	if id.LabelValue() != "drivers.dmdh" || id.Username() != "system:serviceaccount:drivers:dmdh" || id.PolicyName() != "harvester-bootstrap-driver.drivers.dmdh" {
		t.Errorf("label %q user %q policy %q", id.LabelValue(), id.Username(), id.PolicyName())
	}
	for _, tok := range []string{"", "opaque-token", jwt(`{"sub":"admin"}`), jwt(`not json`), "a.!!!.c"} {
		if id, ok := DriverIdentityOfToken(tok); ok {
			t.Errorf("%q: identity %+v", tok, id)
		}
	}
}

func TestGuestObjectsRecognised(t *testing.T) {
	o := BuildAccess(Access{ClusterName: "c1", Namespace: "vms", IssuedBy: "drivers.dmdh"}.WithDefaults())
	for _, rb := range []*rbacv1.RoleBinding{o.RoleBinding, o.CSIRoleBinding} {
		if !IsGuestBinding(*rb) {
			t.Errorf("%s not recognised", rb.Name)
		}
		if rb.Labels[LabelIssuedBy] != "drivers.dmdh" {
			t.Errorf("%s labels %v", rb.Name, rb.Labels)
		}
	}
	if !IsGuestTokenSecret(*o.TokenSecret) {
		t.Error("token Secret not recognised")
	}
	everyone := o.CSIRoleBinding.DeepCopy()
	everyone.Subjects = []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:authenticated"}}
	renamed := o.CSIRoleBinding.DeepCopy()
	renamed.Name = "c1-other"
	unlabelled := o.RoleBinding.DeepCopy()
	unlabelled.Labels = nil
	for _, rb := range []*rbacv1.RoleBinding{everyone, renamed, unlabelled} {
		if IsGuestBinding(*rb) {
			t.Errorf("%s %v recognised as a guest's", rb.Name, rb.Subjects)
		}
	}
	other := o.TokenSecret.DeepCopy()
	other.Annotations[corev1.ServiceAccountNameKey] = "app"
	if IsGuestTokenSecret(*other) {
		t.Error("a token Secret for another ServiceAccount recognised as a guest's")
	}
}

func TestReachingOutside(t *testing.T) {
	token := func(name, sa string, labels map[string]string) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", Labels: labels, Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
			Type: corev1.SecretTypeServiceAccountToken}
	}
	sa := func(name, ns string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}
	}
	group := func(name string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.GroupKind, Name: name} }
	wide := BuildAccess(Access{ClusterName: "wide", Namespace: "vms", CSIClusterWide: true}.WithDefaults())
	crb := func(name string, labels map[string]string, s ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Subjects: s}
	}
	drv := DriverIdentity{Namespace: "vms", ServiceAccount: "drv"}
	tokens := []corev1.Secret{*wide.TokenSecret, token("op-token", "op", nil), token("app-token", "app", nil), token("drv-token", "drv", nil), token("calm-token", "calm", nil)}
	crbs := []rbacv1.ClusterRoleBinding{
		*wide.ClusterRoleBinding,
		crb("op-view", nil, sa("op", "vms")),
		crb(GrantBindingName("vms"), BuildGrant("vms", GrantOptions{}, nil).ReadsBinding.Labels, group("system:serviceaccounts:vms")),
		crb("issuer-discovery", nil, group("system:serviceaccounts")),
		crb("harvester-bootstrap:driver:vms:drv", map[string]string{"app.kubernetes.io/managed-by": "harvester-bootstrap", LabelDriverCredential: drv.LabelValue()}, sa("drv", "vms")),
	}
	rbs := []rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "app-edit", Namespace: "team-b"}, Subjects: []rbacv1.Subject{sa("app", "vms")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "calm-local", Namespace: "vms"}, Subjects: []rbacv1.Subject{sa("calm", "vms")}},
	}
	got := map[string]Reach{}
	for _, r := range ReachingOutside("vms", tokens, crbs, rbs) {
		got[r.Secret] = r
	}
	want := map[string]Reach{
		"vms/wide-token": {Secret: "vms/wide-token", ServiceAccount: "wide", Binding: "ClusterRoleBinding harvester-bootstrap:vms:wide:csi-driver", Migratable: true},
		"vms/op-token":   {Secret: "vms/op-token", ServiceAccount: "op", Binding: "ClusterRoleBinding op-view"},
		"vms/app-token":  {Secret: "vms/app-token", ServiceAccount: "app", Binding: "RoleBinding team-b/app-edit"},
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
	}
}
