package kubeapi

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// TestWaitGone: the wait ends only once the initial state has been
// streamed and the object (of its UID) is absent from it or deleted
// after; a server that refuses the streaming watch, or a stream that
// ends, makes the caller list and watch (ErrWatchEnded).
func TestWaitGone(t *testing.T) {
	secret := func(uid string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: types.UID("u" + uid)}}
	}
	end := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	cases := []struct {
		name   string
		uid    string
		events []watch.Event
		done   bool // the wait ends without error after the events
	}{
		{"absent", "1", []watch.Event{{Type: watch.Bookmark, Object: end}}, true},
		{"present, then deleted", "1", []watch.Event{{Type: watch.Added, Object: secret("1")}, {Type: watch.Bookmark, Object: end}, {Type: watch.Deleted, Object: secret("1")}}, true},
		{"present", "1", []watch.Event{{Type: watch.Added, Object: secret("1")}, {Type: watch.Bookmark, Object: end}}, false},
		{"replaced by another UID", "1", []watch.Event{{Type: watch.Added, Object: secret("2")}, {Type: watch.Bookmark, Object: end}}, true},
		{"initial state not streamed yet", "1", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := watch.NewFakeWithChanSize(len(tc.events), false)
			var got metav1.ListOptions
			k := Kind{Name: "Secret", Watch: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) { got = o; return w, nil }}
			for _, ev := range tc.events {
				w.Action(ev.Type, ev.Object)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := WaitGone(ctx, k, "s", "u1")
			if tc.done && err != nil {
				t.Errorf("got %v, want the wait over", err)
			}
			if !tc.done && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want it still waiting at the deadline", err)
			}
			if got.SendInitialEvents == nil || !*got.SendInitialEvents || got.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || got.FieldSelector != "metadata.name=s" {
				t.Errorf("watch options %+v", got)
			}
		})
	}
	refused := Kind{Name: "Secret", Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", field.ErrorList{field.Forbidden(field.NewPath("sendInitialEvents"), "forbidden")})
	}}
	if _, err := WaitGone(context.Background(), refused, "s", ""); !errors.Is(err, ErrWatchEnded) {
		t.Errorf("refused: got %v, want ErrWatchEnded", err)
	}
	closed := watch.NewFake()
	closed.Stop()
	ended := Kind{Name: "Secret", Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return closed, nil }}
	if _, err := WaitGone(context.Background(), ended, "s", ""); !errors.Is(err, ErrWatchEnded) {
		t.Errorf("stream ended: got %v, want ErrWatchEnded", err)
	}
}

// TestStream: the initial state is the objects streamed before the
// initial-events-end bookmark (one deleted meanwhile is not among them);
// WaitGone ends once the named ones among them are deleted; a stream
// without that bookmark in time falls back (ErrWatchEnded).
func TestStream(t *testing.T) {
	pvc := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	}
	end := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	w := watch.NewFakeWithChanSize(8, false)
	k := Kind{Name: "volume", Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil }}
	w.Add(pvc("a"))
	w.Add(pvc("b"))
	w.Add(pvc("c"))
	w.Delete(pvc("c"))
	w.Action(watch.Bookmark, end)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := OpenStream(ctx, k, "x=y", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if len(s.Items) != 2 {
		t.Fatalf("initial state %v, want a and b", s.Items)
	}
	w.Delete(pvc("a"))
	w.Delete(pvc("b"))
	if err := s.WaitGone(ctx, []string{"a", "b", "not-there"}); err != nil {
		t.Errorf("WaitGone: %v", err)
	}
	silent := Kind{Name: "volume", Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil }}
	if _, err := OpenStream(ctx, silent, "x=y", 50*time.Millisecond); !errors.Is(err, ErrWatchEnded) {
		t.Errorf("no initial state: got %v, want ErrWatchEnded", err)
	}
}
