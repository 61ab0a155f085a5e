package kubeapi

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// WaitGone waits until the object called name (of that UID; "" matches
// any) does not exist, in one request: a watch that streams the current
// state first (sendInitialEvents, Kubernetes' WatchList: the object as it
// is, then a bookmark marking the end of that state) and its changes
// after. It returns the last version of the object it saw (nil when
// none); when it returns no error, the object of another UID that holds
// the name now (nil when no object does). When the server refuses such a watch (WatchList turned off, as
// by default in Kubernetes 1.33), cannot open it, or the watch ends
// early, the error wraps ErrWatchEnded: the caller lists and watches
// instead.
func WaitGone(ctx context.Context, k Kind, name string, uid types.UID) (runtime.Object, error) {
	yes := true
	w, err := k.Watch(ctx, metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector("metadata.name", name).String(),
		SendInitialEvents:    &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		// Refused (422 without WatchList), or not answered (a restarting
		// server): the caller's list and watch retries where this cannot.
		return nil, fmt.Errorf("watch %s %s: %w: %w", k.Name, name, ErrWatchEnded, err)
	}
	defer w.Stop()
	var last, other runtime.Object
	synced := false
	for {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, fmt.Errorf("watch %s %s: %w", k.Name, name, ErrWatchEnded)
			}
			m, _ := ev.Object.(metav1.Object)
			switch {
			case ev.Type == watch.Error:
				return last, fmt.Errorf("watch %s %s: %w: %w", k.Name, name, ErrWatchEnded, apierrors.FromObject(ev.Object))
			case ev.Type == watch.Bookmark:
				synced = synced || (m != nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true")
			case ev.Type == watch.Deleted || m == nil:
				last, other = nil, nil
			case uid != "" && m.GetUID() != uid:
				last, other = nil, ev.Object
			default:
				last = ev.Object
			}
			if synced && last == nil {
				return other, nil
			}
		}
	}
}
