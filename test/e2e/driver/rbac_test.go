package driver_test

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestPreCreateChecksPermissions: a credential that may read but not delete
// VMs nor create Secrets is refused before anything is created, with every
// missing permission named; with --harvester-cloud-provider the rights to
// make the guest credential (and to bind Harvester's two ClusterRoles) are
// checked with the others.
func TestPreCreateChecksPermissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const sa = "e2e-limited"
	if _, err := kube.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines", "virtualmachineinstances"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"harvesterhci.io"}, Resources: []string{"virtualmachineimages", "keypairs"}, Verbs: []string{"get"}},
		{APIGroups: []string{"k8s.cni.cncf.io"}, Resources: []string{"network-attachment-definitions"}, Verbs: []string{"get"}},
	}}
	if _, err := kube.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa}}
	if _, err := kube.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().RoleBindings(namespace).Delete(ctx, sa, metav1.DeleteOptions{})
		_ = kube.RbacV1().Roles(namespace).Delete(ctx, sa, metav1.DeleteOptions{})
		_ = kube.CoreV1().ServiceAccounts(namespace).Delete(ctx, sa, metav1.DeleteOptions{})
	})
	tok, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.ClientCertificate, a.ClientKey, a.Token = nil, nil, "", "", tok.Status.Token
	}
	limited, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}

	r := newRM(t, "e2e-rbac")
	r.env = append(r.env, "HARVESTER_KUBECONFIG_CONTENT="+b64(string(limited)))
	out, err := r.create("e2e-rbac-pool1-r0000", "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1", "--harvester-cloud-provider=rke2")
	if err == nil {
		t.Fatalf("create with a read-only credential succeeded:\n%s", out)
	}
	for _, want := range []string{
		"may not create virtualmachines.kubevirt.io in namespace default",
		"may not delete virtualmachines.kubevirt.io in namespace default",
		"may not create secrets in namespace default",
		"may not delete persistentvolumeclaims in namespace default",
		"may not create serviceaccounts in namespace default",
		"may not create rolebindings.rbac.authorization.k8s.io in namespace default",
		"may not bind clusterroles.rbac.authorization.k8s.io harvesterhci.io:cloudprovider in namespace default",
		"may not bind clusterroles.rbac.authorization.k8s.io harvesterhci.io:csi-driver in namespace default",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "clusterrolebindings") {
		t.Errorf("the driver asks for rights on ClusterRoleBindings:\n%s", out)
	}
	if strings.Contains(out, "creating VM") {
		t.Errorf("create went past the pre-create check:\n%s", out)
	}
}
