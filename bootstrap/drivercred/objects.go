package drivercred

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
)

// Objects are the credential's objects on Harvester, in creation order.
type Objects struct {
	// The admission policy refusing the driver's writes that would give it
	// a token or a binding beyond the guest credentials, and its binding to
	// the machine namespaces: made first, so the token never exists
	// without them.
	Policy        *admissionv1.ValidatingAdmissionPolicy
	PolicyBinding *admissionv1.ValidatingAdmissionPolicyBinding
	// With CloudProvider: the grant policy, refusing the driver's writes of
	// the machine namespaces' grant bindings but adding guest
	// ServiceAccounts, and its binding for each machine namespace (nil
	// without).
	GrantPolicy         *admissionv1.ValidatingAdmissionPolicy
	GrantPolicyBindings []*admissionv1.ValidatingAdmissionPolicyBinding
	ServiceAccount      *corev1.ServiceAccount
	ClusterRole         *rbacv1.ClusterRole
	ClusterRoleBinding  *rbacv1.ClusterRoleBinding
	Roles               []*rbacv1.Role        // one per machine namespace
	RoleBindings        []*rbacv1.RoleBinding // one per machine namespace
	TokenSecret         *corev1.Secret
}

// Build builds the objects of a defaulted, valid Spec.
func Build(s Spec) Objects {
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: s.Labels()}
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: s.ServiceAccount, Namespace: s.Namespace}}
	roleRules, clusterRules := driverrights.PolicyRules(s.Permissions())
	secretMeta := meta(s.TokenSecretName(), s.Namespace)
	secretMeta.Annotations = map[string]string{corev1.ServiceAccountNameKey: s.ServiceAccount}
	policy, binding := credentials.BuildDriverPolicy(s.Identity(), s.MachineNamespaces, s.Labels())
	o := Objects{
		Policy:         policy,
		PolicyBinding:  binding,
		ServiceAccount: &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta(s.ServiceAccount, s.Namespace)},
		ClusterRole:    &rbacv1.ClusterRole{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"), ObjectMeta: meta(s.RBACName(), ""), Rules: clusterRules},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"), ObjectMeta: meta(s.RBACName(), ""),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: s.RBACName()}, Subjects: subjects,
		},
		TokenSecret: &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: secretMeta, Type: corev1.SecretTypeServiceAccountToken},
	}
	if s.CloudProvider {
		o.GrantPolicy, o.GrantPolicyBindings = credentials.BuildGrantPolicy(s.Identity(), s.MachineNamespaces, s.Labels())
	}
	for _, ns := range s.MachineNamespaces {
		o.Roles = append(o.Roles, &rbacv1.Role{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "Role"), ObjectMeta: meta(s.RBACName(), ns), Rules: roleRules})
		o.RoleBindings = append(o.RoleBindings, &rbacv1.RoleBinding{
			TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "RoleBinding"), ObjectMeta: meta(s.RBACName(), ns),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: s.RBACName()}, Subjects: subjects,
		})
	}
	return o
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}
