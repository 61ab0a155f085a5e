package clusterstate

import (
	"context"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DriverCredential is what the node driver's kubeconfig authenticates as
// and may do in the VM namespace (a SelfSubjectRulesReview, which lists
// the namespace's and the cluster-wide rules together). No secret is kept.
type DriverCredential struct {
	Auth
	Namespace  string
	Rules      []authv1.ResourceRule
	Incomplete bool
	// RulesErr is why the rules could not be read; empty when they were.
	RulesErr string
}

// ReviewDriver authenticates the driver's credential and reviews its
// rights in namespace.
func ReviewDriver(ctx context.Context, cfg *rest.Config, source, namespace string) DriverCredential {
	d := DriverCredential{Auth: Authenticate(ctx, cfg, source), Namespace: namespace}
	if d.Err != "" {
		return d
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err == nil {
		var r *authv1.SelfSubjectRulesReview
		r, err = cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
			&authv1.SelfSubjectRulesReview{Spec: authv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}, metav1.CreateOptions{})
		if err == nil {
			d.Rules, d.Incomplete = r.Status.ResourceRules, r.Status.Incomplete
			return d
		}
	}
	d.RulesErr = "review the rights of " + source + " in namespace " + namespace + ": " + err.Error()
	return d
}
