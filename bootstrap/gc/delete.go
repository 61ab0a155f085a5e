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
		case apierrors.IsConflict(err):
			r.Outcome = Replaced
		default:
			r.Error = fmt.Sprintf("delete %s %s: %v", cand.Kind, cand.Ref(), err)
			failed = true
		}
		results = append(results, r)
	}
	return results, failed
}

// deleteOne is one API call per kind.
func deleteOne(ctx context.Context, c *clusterstate.Clients, cand Candidate) error {
	uid := types.UID(cand.UID)
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	ns, name := cand.Namespace, cand.Name
	switch cand.Kind {
	case clusterstate.KindLoadBalancer:
		return c.Dyn.Resource(clusterstate.GVRLoadBalancer).Namespace(ns).Delete(ctx, name, opts)
	case clusterstate.KindSecret:
		return c.Kube.CoreV1().Secrets(ns).Delete(ctx, name, opts)
	case clusterstate.KindPVC:
		return c.Kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, opts)
	case clusterstate.KindServiceAccount:
		return c.Kube.CoreV1().ServiceAccounts(ns).Delete(ctx, name, opts)
	case clusterstate.KindRoleBinding:
		return c.Kube.RbacV1().RoleBindings(ns).Delete(ctx, name, opts)
	case clusterstate.KindClusterRoleBinding:
		return c.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, opts)
	}
	return fmt.Errorf("gc cannot delete kind %s", cand.Kind)
}
