package create

import (
	"context"
	"errors"
	"fmt"
	"time"

	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// cleanupTimeout bounds the rollback of a failed create.
const cleanupTimeout = 5 * time.Minute

// rollback runs, newest first, the undo steps of a failed create.
type rollback []func(context.Context) error

func (r *rollback) add(f func(context.Context) error) { *r = append(*r, f) }

// run undoes what a failed create made. It runs past the create's own
// deadline or cancellation (that may be why it failed), with a deadline
// of its own.
func (r rollback) run(ctx context.Context, machine string, err error) error {
	if err == nil || len(r) == 0 {
		return err
	}
	log.Warnf("%s: create failed, removing what it created", machine)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var cerrs []error
	for i := len(r) - 1; i >= 0; i-- {
		if cerr := r[i](ctx); cerr != nil {
			cerrs = append(cerrs, cerr)
		}
	}
	if len(cerrs) > 0 {
		return fmt.Errorf("%w; cleanup after the failed create also failed: %w", err, errors.Join(cerrs...))
	}
	return err
}
