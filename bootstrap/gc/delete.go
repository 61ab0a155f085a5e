package gc

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
)

// Outcomes of deleting one candidate.
const (
	Deleted  = "deleted"
	Gone     = "already gone"
	Replaced = "replaced since listed, left alone"
)

// Result is what happened to one candidate.
type Result struct {
	Candidate
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Delete removes each candidate, only the very object that was listed (UID
// precondition); NotFound counts as done. It returns one result per
// candidate and whether any failed.
func Delete(ctx context.Context, c *clusterstate.Clients, candidates []Candidate) ([]Result, bool) {
	results := make([]Result, 0, len(candidates))
	failed := false
	for _, cand := range candidates {
		r := Result{Candidate: cand}
		err := deleteOne(ctx, c, cand)
		switch {
		case err == nil:
			r.Outcome = Deleted
		case apierrors.IsNotFound(err):
			r.Outcome = Gone
		case apierrors.IsConflict(err) && !stillThere(ctx, c, cand):
			r.Outcome = Replaced
		default:
			r.Error = fmt.Sprintf("delete %s %s: %v", cand.Kind, cand.Ref(), err)
			failed = true
		}
		results = append(results, r)
	}
	return results, failed
}

// deleteOne is one API call: the candidate's delete, only of the very
// object that was listed (UID precondition).
func deleteOne(ctx context.Context, c *clusterstate.Clients, cand Candidate) error {
	ops, err := opsOf(c, cand)
	if err != nil {
		return err
	}
	uid := types.UID(cand.UID)
	return ops.del(ctx, cand.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// stillThere tells the two Conflicts of a delete apart: the UID
// precondition failing (the name holds another object since it was
// listed: false) or an admission webhook refusing the delete with a 409,
// as Harvester's does for a volume a VM uses (the listed object is still
// there: true). Unknown counts as there, so the refusal is reported.
func stillThere(ctx context.Context, c *clusterstate.Clients, cand Candidate) bool {
	ops, err := opsOf(c, cand)
	if err != nil {
		return true
	}
	uid, err := ops.uid(ctx, cand.Name)
	return !apierrors.IsNotFound(err) && (err != nil || uid == types.UID(cand.UID))
}

// kindOps are the calls on one kind's objects of one namespace.
type kindOps struct {
	del func(ctx context.Context, name string, o metav1.DeleteOptions) error
	uid func(ctx context.Context, name string) (types.UID, error)
}

type getDeleter[T metav1.Object] interface {
	Get(ctx context.Context, name string, o metav1.GetOptions) (T, error)
	Delete(ctx context.Context, name string, o metav1.DeleteOptions) error
}

func typed[T metav1.Object](r getDeleter[T]) kindOps {
	return kindOps{del: r.Delete, uid: func(ctx context.Context, name string) (types.UID, error) {
		o, err := r.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return o.GetUID(), nil
	}}
}

func opsOf(c *clusterstate.Clients, cand Candidate) (kindOps, error) {
	ns := cand.Namespace
	switch cand.Kind {
	case clusterstate.KindLoadBalancer:
		r := c.Dyn.Resource(clusterstate.GVRLoadBalancer).Namespace(ns)
		return kindOps{
			del: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return r.Delete(ctx, name, o) },
			uid: func(ctx context.Context, name string) (types.UID, error) {
				o, err := r.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				return o.GetUID(), nil
			},
		}, nil
	case clusterstate.KindSecret:
		return typed(c.Kube.CoreV1().Secrets(ns)), nil
	case clusterstate.KindPVC:
		return typed(c.Kube.CoreV1().PersistentVolumeClaims(ns)), nil
	case clusterstate.KindServiceAccount:
		return typed(c.Kube.CoreV1().ServiceAccounts(ns)), nil
	case clusterstate.KindRoleBinding:
		return typed(c.Kube.RbacV1().RoleBindings(ns)), nil
	case clusterstate.KindClusterRoleBinding:
		return typed(c.Kube.RbacV1().ClusterRoleBindings()), nil
	}
	return kindOps{}, fmt.Errorf("gc cannot delete kind %s", cand.Kind)
}
