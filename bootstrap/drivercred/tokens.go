package drivercred

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
)

// tokenSecrets selects the Secrets of type service-account-token.
var tokenSecrets = fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()

// deleteIssuedTokens deletes every token Secret the driver's ServiceAccount
// made: its admission policy refuses one without credentials.LabelIssuedBy
// naming it, so the label finds them all. Deleting the Secret invalidates
// its token.
func (h *Harvester) deleteIssuedTokens(ctx context.Context, s Spec) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: credentials.LabelIssuedBy + "=" + s.LabelValue(), FieldSelector: tokenSecrets}
	list, err := h.Kube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list the token Secrets the driver made (%s): %w", sel.LabelSelector, err)
	}
	var deleted []string
	for _, sec := range list.Items {
		x := h.handle("Secret", sec.Namespace, sec.Name, nil)
		if err := x.DeleteAndWait(ctx, sec.UID); err != nil {
			return deleted, err
		}
		h.Log.Info("deleted a token the driver credential made", "object", x.String())
		deleted = append(deleted, x.String())
	}
	return deleted, nil
}

// NotMadeByTool lists, in namespaces, what gives a token or a guest role
// and that this tool did not make: token Secrets other than guest and
// driver credentials', and RoleBindings of the two Harvester guest roles
// other than guest credentials'. A driver credential serving the namespace
// can read those tokens (reads cannot be narrowed by name).
func (h *Harvester) NotMadeByTool(ctx context.Context, namespaces []string) ([]string, error) {
	var out []string
	for _, ns := range namespaces {
		secrets, err := h.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{FieldSelector: tokenSecrets})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("list token Secrets in %s: %w", ns, err)
		}
		for _, sec := range secrets.Items {
			if !credentials.IsGuestTokenSecret(sec) && !isDriverToken(sec) {
				out = append(out, fmt.Sprintf("token Secret %s/%s of ServiceAccount %s", ns, sec.Name, sec.Annotations[corev1.ServiceAccountNameKey]))
			}
		}
		rbs, err := h.Kube.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, fmt.Errorf("list RoleBindings in %s: %w", ns, err)
		}
		for _, rb := range rbs.Items {
			if credentials.IsGuestRole(rb.RoleRef) && !credentials.IsGuestBinding(rb) {
				out = append(out, fmt.Sprintf("RoleBinding %s/%s of %s", ns, rb.Name, rb.RoleRef.Name))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// isDriverToken reports whether sec is a driver credential's token Secret.
func isDriverToken(sec corev1.Secret) bool {
	sa := sec.Annotations[corev1.ServiceAccountNameKey]
	s := Spec{Namespace: sec.Namespace, ServiceAccount: sa}
	return sec.Labels[addons.LabelManagedBy] == addons.ManagedBy && s.Owns(sec.Labels) && sec.Name == s.TokenSecretName()
}
