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

func (r rollback) run(machine string, err error) error {
	if err == nil || len(r) == 0 {
		return err
	}
	log.Warnf("%s: create failed, removing what it created", machine)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
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
