package controllers

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
)

// reconcileFunc handles one key; a positive requeueAfter schedules the key
// again (that is how the simulated delays work), an error retries it with
// backoff.
type reconcileFunc func(ctx context.Context, key string) (requeueAfter time.Duration, err error)

// Retry pacing: a failing key backs off from 5ms to at most 2s, so the
// controllers catch up within seconds after a kube-apiserver restart.
const (
	retryBaseDelay = 5 * time.Millisecond
	retryMaxDelay  = 2 * time.Second
	retryQPS       = 100
	retryBurst     = 500
)

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
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBaseDelay, retryMaxDelay),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(retryQPS), retryBurst)},
			),
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
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
			q.log.Debug("cache behind the apiserver, retrying", "key", key, "err", err)
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
