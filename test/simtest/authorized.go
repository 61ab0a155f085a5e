package simtest

import (
	"context"
	"fmt"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitAuthorized waits until kube-apiserver answers allowed for the
// client's own user and ra (a SelfSubjectAccessReview). It authorizes
// from RBAC informers, so a binding just written or deleted may take a
// moment to count.
func WaitAuthorized(ctx context.Context, cs kubernetes.Interface, ra authzv1.ResourceAttributes, allowed bool) error {
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed == allowed, nil
	})
	if err != nil {
		return fmt.Errorf("%s %s.%s never became allowed=%v: %w", ra.Verb, ra.Resource, ra.Group, allowed, err)
	}
	return nil
}
