package sim

import (
	"context"
	"fmt"
	"time"
)

// graceRequest asks serve to start kube-controller-manager again with a
// new --node-monitor-grace-period (a tunable changed) and says how it went.
type graceRequest struct {
	grace time.Duration
	done  chan error
}

// kcmRestartTimeout bounds starting kube-controller-manager again.
const kcmRestartTimeout = time.Minute

// graceSetter is the controllers' way to a new grace period: serve, which
// owns the control plane's processes, does the restart.
func graceSetter(requests chan<- graceRequest) func(context.Context, time.Duration) error {
	return func(ctx context.Context, grace time.Duration) error {
		req := graceRequest{grace: grace, done: make(chan error, 1)}
		select {
		case requests <- req:
		case <-ctx.Done():
			return fmt.Errorf("set the node grace period: %w", ctx.Err())
		}
		select {
		case err := <-req.done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("set the node grace period: %w", ctx.Err())
		}
	}
}

// restartControllerManager stops kube-controller-manager and starts it
// with grace as its --node-monitor-grace-period; its node lifecycle
// controller then judges every host afresh, from its next Lease renewal.
func (c *controlPlane) restartControllerManager(ctx context.Context, grace time.Duration) error {
	c.kcm.stop(5 * time.Second)
	if err := c.startControllerManager(ctx, grace); err != nil {
		return fmt.Errorf("start kube-controller-manager with --node-monitor-grace-period=%s: %w", grace, err)
	}
	return nil
}
