package kubeapi

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// DeleteRefused tells apart the two 409 Conflicts a delete with a UID
// precondition can get. Either the precondition failed: the name now holds
// another object, or none, so the object meant is gone (false). Or an
// admission webhook refused the delete with a Conflict, as Harvester's
// volume validator does for a volume a VM still uses (werror.NewConflict):
// the object of that UID is still there (true). current reads the UID the
// name holds now; its NotFound means none.
func DeleteRefused(ctx context.Context, uid types.UID, current func(context.Context) (types.UID, error)) (bool, error) {
	now, err := current(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return now == uid, nil
}
