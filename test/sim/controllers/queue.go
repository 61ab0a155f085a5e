package controllers

import (
	"context"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
)

// reconcileFunc handles one key; a positive requeueAfter schedules the key
// again (that is how the simulated delays work), an error retries it with
// backoff.
type reconcileFunc func(ctx context.Context, key string) (requeueAfter time.Duration, err error)

// queue is a rate-limited work queue with one worker.
type queue struct {
	name string
	q    workqueue.TypedRateLimitingInterface[string]
	fn   reconcileFunc
	log  *slog.Logger
}

func newQueue(name string, fn reconcileFunc, log *slog.Logger) *queue {
	return &queue{
		name: name,
		q: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "sim-" + name}),
		fn:  fn,
		log: log.With("controller", name),
	}
}

func (q *queue) add(key string) { q.q.Add(key) }

func (q *queue) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		q.q.ShutDown()
	}()
	for q.next(ctx) {
	}
}

func (q *queue) next(ctx context.Context) bool {
	key, shutdown := q.q.Get()
	if shutdown {
		return false
	}
	defer q.q.Done(key)
	after, err := q.fn(ctx, key)
	switch {
	case err != nil:
		switch {
		case ctx.Err() != nil:
		case apierrors.IsConflict(err):
			q.log.Debug("conflict, retrying", "key", key, "err", err)
		default:
			q.log.Info("reconcile failed, retrying", "key", key, "err", err)
		}
		q.q.AddRateLimited(key)
	case after > 0:
		q.q.Forget(key)
		q.q.AddAfter(key, after)
	default:
		q.q.Forget(key)
	}
	return true
}
