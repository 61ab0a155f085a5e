package gc

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
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
		case apierrors.IsConflict(err) && !refused(ctx, c, cand):
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

// refused reports whether a delete's Conflict was a refusal (see
// kubeapi.DeleteRefused), not the candidate replaced since it was listed;
// when that cannot be told, it counts as refused, so it is reported.
func refused(ctx context.Context, c *clusterstate.Clients, cand Candidate) bool {
	ops, err := opsOf(c, cand)
	if err != nil {
		return true
	}
	refused, err := kubeapi.DeleteRefused(ctx, types.UID(cand.UID), func(ctx context.Context) (types.UID, error) { return ops.uid(ctx, cand.Name) })
	return refused || err != nil
}

// kindOps are the calls on one kind's objects of one namespace.
type kindOps struct {
	del func(ctx context.Context, name string, o metav1.DeleteOptions) error
	uid func(ctx context.Context, name string) (types.UID, error)
}

// getDeleter is what a typed client of one kind offers.
type getDeleter[T metav1.Object] interface {
	Get(ctx context.Context, name string, o metav1.GetOptions) (T, error)
	Delete(ctx context.Context, name string, o metav1.DeleteOptions) error
}

// typed makes a kind's calls from its client.
func typed[T metav1.Object](r getDeleter[T]) kindOps {
	return kindOps{del: r.Delete, uid: func(ctx context.Context, name string) (types.UID, error) {
		o, err := r.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return o.GetUID(), nil
	}}
}

// dynamicObjects gives a dynamic client getDeleter's methods.
type dynamicObjects struct{ r dynamic.ResourceInterface }

func (d dynamicObjects) Get(ctx context.Context, name string, o metav1.GetOptions) (*unstructured.Unstructured, error) {
	return d.r.Get(ctx, name, o)
}

func (d dynamicObjects) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	return d.r.Delete(ctx, name, o)
}

// opsOf are the calls on the candidate's kind, in its namespace.
func opsOf(c *clusterstate.Clients, cand Candidate) (kindOps, error) {
	ns := cand.Namespace
	switch cand.Kind {
	case clusterstate.KindLoadBalancer:
		return typed[*unstructured.Unstructured](dynamicObjects{c.Dyn.Resource(clusterstate.GVRLoadBalancer).Namespace(ns)}), nil
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
