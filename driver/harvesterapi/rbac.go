package harvesterapi

import (
	"context"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetServiceAccount reads a ServiceAccount.
func (a *API) GetServiceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return do(ctx, a, "get ServiceAccount "+ref(ns, name), func(c context.Context) (*corev1.ServiceAccount, error) {
		return a.kube.ServiceAccounts(ns).Get(c, name, metav1.GetOptions{})
	})
}

// GetRoleBinding reads a RoleBinding.
func (a *API) GetRoleBinding(ctx context.Context, ns, name string) (*rbacv1.RoleBinding, error) {
	return do(ctx, a, "get RoleBinding "+ref(ns, name), func(c context.Context) (*rbacv1.RoleBinding, error) {
		return a.kube.RoleBindings(ns).Get(c, name, metav1.GetOptions{})
	})
}

// RulesReview asks with a SelfSubjectRulesReview what the credential may
// do in namespace ns.
func (a *API) RulesReview(ctx context.Context, ns string) (*authv1.SubjectRulesReviewStatus, error) {
	review := &authv1.SelfSubjectRulesReview{Spec: authv1.SelfSubjectRulesReviewSpec{Namespace: ns}}
	res, err := do(ctx, a, "review the credential's permissions in namespace "+ns, func(c context.Context) (*authv1.SelfSubjectRulesReview, error) {
		return a.kube.SelfSubjectRulesReviews().Create(c, review, metav1.CreateOptions{})
	})
	if err != nil {
		return nil, err
	}
	a.seen.RememberRules(ns, &res.Status)
	return &res.Status, nil
}

// Allowed asks with a SelfSubjectAccessReview whether the credential may do
// what attrs say; what names it in the error.
func (a *API) Allowed(ctx context.Context, attrs authv1.ResourceAttributes, what string) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	res, err := do(ctx, a, "check permission "+what, func(c context.Context) (*authv1.SelfSubjectAccessReview, error) {
		return a.kube.SelfSubjectAccessReviews().Create(c, review, metav1.CreateOptions{})
	})
	return err == nil && res.Status.Allowed, err
}
