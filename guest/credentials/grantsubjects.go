package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/restapi"
)

// ErrGrantMissing: namespace ns has no grant (its ClusterRoleBinding does
// not exist); an admin makes it.
var ErrGrantMissing = errors.New("the namespace has no grant")

// grantSubjects lists the guest ServiceAccounts of ns as the grant's
// subjects.
func (h *Harvester) grantSubjects(ctx context.Context, ns string) ([]rbacv1.Subject, error) {
	sas, err := h.Client.ServiceAccounts(ns).List(ctx, metav1.ListOptions{LabelSelector: GuestServiceAccountSelector})
	if err != nil {
		return nil, fmt.Errorf("list the guest ServiceAccounts of %s: %w", ns, err)
	}
	return GrantSubjects(ns, sas.Items), nil
}

// AddToGrant names guest ServiceAccount sa of ns in every existing binding
// of ns's grant, keeping the other subjects: the node driver's call, which
// may neither list ServiceAccounts nor make a grant. It needs only get and
// patch on the bindings by name (driverrights' GrantEdit, with bind on the
// two roles). A credential that may not read the ClusterRoleBinding gets
// ErrGrantUnseen, a namespace without one ErrGrantMissing; nothing changes
// then.
func (h *Harvester) AddToGrant(ctx context.Context, ns, sa string) error {
	add := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}
	_, err := h.Client.ClusterRoleBindings().Get(ctx, GrantBindingName(ns), metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w %s: %w", ErrGrantUnseen, GrantBindingName(ns), err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w (ClusterRoleBinding %s)", ErrGrantMissing, GrantBindingName(ns))
	case err != nil:
		return fmt.Errorf("get ClusterRoleBinding %s: %w", GrantBindingName(ns), err)
	}
	return h.setGrantSubjects(ctx, ns, func(cur []rbacv1.Subject) []rbacv1.Subject {
		if slices.Contains(cur, add) {
			return cur
		}
		return append(slices.Clone(cur), add)
	})
}

// setGrantSubjects sets the subjects of each existing binding of ns's grant
// to update(its subjects), by a merge patch conditional on the
// resourceVersion read (conflicts retried); a binding of a grant name that
// is not this tool's is left alone; one already right is not written.
func (h *Harvester) setGrantSubjects(ctx context.Context, ns string, update func([]rbacv1.Subject) []rbacv1.Subject) error {
	g := BuildGrant(ns, GrantOptions{}, nil)
	targets := []restapi.Named{}
	if o, ok := h.objectOf("ClusterRoleBinding", "", g.ReadsBinding.Name); ok {
		targets = append(targets, o)
	}
	for _, b := range g.SharedGrants {
		if o, ok := h.objectOf("RoleBinding", b.Namespace, b.Name); ok {
			targets = append(targets, o)
		}
	}
	for _, o := range targets {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := o.Get(ctx)
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("get %s: %w", o, err)
			case !IsGrantObject(cur.GetLabels()):
				return nil
			}
			var subjects []rbacv1.Subject
			switch b := cur.(type) {
			case *rbacv1.ClusterRoleBinding:
				subjects = b.Subjects
			case *rbacv1.RoleBinding:
				subjects = b.Subjects
			}
			want := update(subjects)
			if slices.Equal(subjects, want) {
				return nil
			}
			if want == nil {
				want = []rbacv1.Subject{}
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cur.GetResourceVersion()}, "subjects": want})
			if err != nil {
				return err
			}
			if _, err := o.Patch(ctx, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: addons.FieldManager}); err != nil {
				return fmt.Errorf("set the subjects of %s: %w", o, err)
			}
			h.Log.Info("grant subjects set", "object", o.String(), "subjects", len(want))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
