package kubeapi

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Stream is a list and a watch in one request: a watch of the objects a
// label selector (or one name) selects that streamed their current state
// first (sendInitialEvents, as WaitGone uses it). Items is that state; the
// watch goes on with the changes after it (WaitGone, Changes).
type Stream struct {
	Items []runtime.Object
	w     watch.Interface
	what  string
}

// OpenStream opens a Stream and reads the initial state, which must
// arrive within initialTimeout. When the server refuses such a watch,
// cannot be reached, or the state does not arrive in time, the error
// wraps ErrWatchEnded: the caller lists (and later watches) instead.
func OpenStream(ctx context.Context, k Kind, labelSelector string, initialTimeout time.Duration) (*Stream, error) {
	return openStream(ctx, k, metav1.ListOptions{LabelSelector: labelSelector}, k.Name+"s "+labelSelector, initialTimeout)
}

// OpenNamedStream is OpenStream of the one object called name (a
// metadata.name field selector): Items holds it, or nothing when it does
// not exist.
func OpenNamedStream(ctx context.Context, k Kind, name string, initialTimeout time.Duration) (*Stream, error) {
	o := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	return openStream(ctx, k, o, k.Name+" "+name, initialTimeout)
}

func openStream(ctx context.Context, k Kind, o metav1.ListOptions, what string, initialTimeout time.Duration) (*Stream, error) {
	yes := true
	o.SendInitialEvents, o.ResourceVersionMatch, o.AllowWatchBookmarks = &yes, metav1.ResourceVersionMatchNotOlderThan, true
	w, err := k.Watch(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w: %w", what, ErrWatchEnded, err)
	}
	s := &Stream{w: w, what: what}
	byName := map[string]runtime.Object{}
	var order []string
	timer := time.NewTimer(initialTimeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return nil, ctx.Err()
		case <-timer.C:
			w.Stop()
			return nil, fmt.Errorf("watch %s: %w: no initial state within %s", what, ErrWatchEnded, initialTimeout)
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				w.Stop()
				return nil, fmt.Errorf("watch %s: %w", what, ErrWatchEnded)
			}
			m, isMeta := ev.Object.(metav1.Object)
			switch {
			case !isMeta:
			case ev.Type == watch.Bookmark:
				if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
					for _, n := range order {
						if o, ok := byName[n]; ok {
							s.Items = append(s.Items, o)
						}
					}
					return s, nil
				}
			case ev.Type == watch.Deleted:
				delete(byName, m.GetName())
			default:
				if _, seen := byName[m.GetName()]; !seen {
					order = append(order, m.GetName())
				}
				byName[m.GetName()] = ev.Object
			}
		}
	}
}

// WaitGone waits until every object of names among the stream's initial
// Items is deleted (names not among them count as gone).
func (s *Stream) WaitGone(ctx context.Context, names []string) error {
	left := map[string]bool{}
	for _, it := range s.Items {
		left[it.(metav1.Object).GetName()] = false
	}
	for _, n := range names {
		if _, ok := left[n]; ok {
			left[n] = true
		}
	}
	for n, wanted := range left {
		if !wanted {
			delete(left, n)
		}
	}
	for len(left) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-s.w.ResultChan():
			if !ok {
				return fmt.Errorf("watch %s: %w", s.what, ErrWatchEnded)
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watch %s: %w: %w", s.what, ErrWatchEnded, apierrors.FromObject(ev.Object))
			}
			if m, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Deleted {
				delete(left, m.GetName())
			}
		}
	}
	return nil
}

// Changes are the watch's events after the initial state; the channel
// closes when the watch ends.
func (s *Stream) Changes() <-chan watch.Event { return s.w.ResultChan() }

// Resume is k whose first watch is the stream itself (its options are
// ignored: the stream already selects what the caller asks for) and whose
// later watches are k's: a wait (WaitFrom) goes on from the stream's
// events, the ones queued since it was opened first, without another
// request, and reconnects through k if it drops.
func (s *Stream) Resume(k Kind) Kind {
	var used atomic.Bool
	watchFn := k.Watch
	k.Watch = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		if used.CompareAndSwap(false, true) {
			return s.w, nil
		}
		return watchFn(ctx, o)
	}
	return k
}

// Stop ends the watch.
func (s *Stream) Stop() {
	if s != nil {
		s.w.Stop()
	}
}
