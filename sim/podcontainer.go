// Stand-in for the kubelet, Kubernetes v1.34.4: a Pod's container
// started again after it exits, with the crash-loop back-off. It follows
// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/kubelet.go.

package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// The kubelet's crash-loop back-off (Kubernetes 1.34 defaults): a
// container that exits is started again at once, then after 10 s, 20 s,
// ... up to 5 min; the back-off is forgotten once the container has run
// for 10 minutes.
const (
	crashLoopInitial = 10 * time.Second
	crashLoopMax     = 5 * time.Minute
	crashLoopReset   = 10 * time.Minute
)

// podContainer is a process the simulator runs as a Pod's container runs
// under the kubelet (restartPolicy Always): whenever it exits on its own,
// it is started again after the kubelet's back-off. virt-controller, for
// one, exits when it loses its leader lease (a kube-apiserver away for
// more than its 10 s renew deadline) and counts on being restarted.
type podContainer struct {
	name  string
	start func() (*process, error)
	log   *slog.Logger

	mu      sync.Mutex
	cur     *process
	stopped bool
	stopCh  chan struct{}
}

// runPodContainer starts the container and keeps it running until stop.
func runPodContainer(name string, start func() (*process, error), log *slog.Logger) (*podContainer, error) {
	p, err := start()
	if err != nil {
		return nil, err
	}
	c := &podContainer{name: name, start: start, log: log, cur: p, stopCh: make(chan struct{})}
	go c.supervise()
	return c, nil
}

// current is the process running now (or the last one, while it waits to
// be restarted).
func (c *podContainer) current() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *podContainer) supervise() {
	backoff := time.Duration(0)
	for {
		p := c.current()
		began := time.Now()
		select {
		case <-c.stopCh:
			return
		case <-p.done:
		}
		if time.Since(began) >= crashLoopReset {
			backoff = 0
		}
		_, err := p.exited()
		c.log.Warn("exited; started again as the kubelet would", "container", c.name, "err", err, "in", backoff)
		select {
		case <-c.stopCh:
			return
		case <-time.After(backoff):
		}
		backoff = min(max(2*backoff, crashLoopInitial), crashLoopMax)
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return
		}
		next, err := c.start()
		if err == nil {
			c.cur = next
		}
		c.mu.Unlock()
		if err != nil {
			c.log.Error("start again", "container", c.name, "err", err)
			return
		}
	}
}

// waitReady waits until check passes, across restarts: a container that
// exits while it starts is started again (supervise), as the kubelet
// would, and is waited for again; ctx bounds it all. The error names the
// last exit when there was one.
func (c *podContainer) waitReady(ctx context.Context, check func(context.Context) error) error {
	var exits error
	for {
		p := c.current()
		err := p.waitUntil(ctx, c.name, check)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return errors.Join(err, exits)
		}
		exits = err
		for c.current() == p {
			select {
			case <-ctx.Done():
				return fmt.Errorf("wait for %s: %w (it exited: %w)", c.name, ctx.Err(), exits)
			case <-c.stopCh:
				return fmt.Errorf("wait for %s: stopped (it exited: %w)", c.name, exits)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// waitRestarted waits until the container's process is no longer p:
// supervise started it again after p exited.
func (c *podContainer) waitRestarted(ctx context.Context, p *process) error {
	for c.current() == p {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to start again: %w", c.name, ctx.Err())
		case <-c.stopCh:
			return fmt.Errorf("wait for %s to start again: stopped", c.name)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// stop ends the container for good.
func (c *podContainer) stop(grace time.Duration) {
	c.mu.Lock()
	if !c.stopped {
		c.stopped = true
		close(c.stopCh)
	}
	p := c.cur
	c.mu.Unlock()
	p.stop(grace)
}

// podRun holds a podContainer started in the background, for the run's
// stop.
type podRun struct {
	mu        sync.Mutex
	container *podContainer
}

func (r *podRun) set(pc *podContainer) {
	r.mu.Lock()
	r.container = pc
	r.mu.Unlock()
}

func (r *podRun) stop() {
	r.mu.Lock()
	pc := r.container
	r.mu.Unlock()
	if pc != nil {
		pc.stop(5 * time.Second)
	}
}

// waitStarted waits until started (run in the background) returns, or
// fails with the container's exit when it exits first.
func (c *podContainer) waitStarted(started func() error) error {
	result := make(chan error, 1)
	go func() { result <- started() }()
	select {
	case err := <-result:
		return err
	case <-c.current().done:
		_, err := c.current().exited()
		return err
	}
}
