package simtest

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// runKeyed runs a controller the way client-go and wrangler controllers
// do: every add, update (and delete when withDelete) of inf queues the
// object's key; one worker hands the cached object (skipped once gone) to
// handle with a 30 s deadline; an error goes to onErr and requeues the key
// with the default controller rate limit. It starts the informers of start
// and returns once inf has listed.
func runKeyed(ctx context.Context, name string, inf cache.SharedIndexInformer, start func(<-chan struct{}), withDelete bool,
	handle func(ctx context.Context, obj any) error, onErr func(error)) error {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }}
	if withDelete {
		h.DeleteFunc = enqueue
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		q.ShutDown()
		return fmt.Errorf("%s: not listed: %w", name, ctx.Err())
	}
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for {
			key, shutdown := q.Get()
			if shutdown {
				return
			}
			obj, exists, err := inf.GetStore().GetByKey(key)
			if err == nil && exists {
				hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err = handle(hctx, obj)
				cancel()
			}
			if err != nil {
				if onErr != nil {
					onErr(fmt.Errorf("%s: %s: %w", name, key, err))
				}
				q.AddRateLimited(key)
			} else {
				q.Forget(key)
			}
			q.Done(key)
		}
	}, time.Second)
	return nil
}
