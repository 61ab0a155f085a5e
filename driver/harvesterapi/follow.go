package harvesterapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/harvester-kit/harvester-machine/internal/driverrights"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// followed is an object a create reads once (an image, a network, a key
// pair): one watch streams its state first and goes on with its changes,
// so every later read in the process answers from it, a change made since
// the pre-create check included, without another request.
type followed struct {
	stream *kubeapi.Stream
	mu     sync.Mutex
	obj    *unstructured.Unstructured // nil: the object does not exist
	ended  bool                       // the watch ended: the next read reads again
}

// current is the object as last seen (nil: it does not exist), and false
// when the watch has ended and cannot tell.
func (f *followed) current() (*unstructured.Unstructured, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return nil, false
	}
	if f.obj == nil {
		return nil, true
	}
	return f.obj.DeepCopy(), true
}

// follow applies the watch's changes until it ends, and tells changed
// after each one.
func (f *followed) follow(changed chan<- struct{}) {
	defer func() {
		f.mu.Lock()
		f.ended = true
		f.mu.Unlock()
		tell(changed)
	}()
	for ev := range f.stream.Changes() {
		if ev.Type == watch.Error {
			return
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Bookmark {
			continue
		}
		f.mu.Lock()
		if ev.Type == watch.Deleted {
			f.obj = nil
		} else {
			f.obj = u
		}
		f.mu.Unlock()
		tell(changed)
	}
}

func tell(changed chan<- struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}

// ErrNotFollowed is a read's error, in a context of FollowedOnly, of an
// object no watch follows (never read, or its watch ended).
var ErrNotFollowed = errors.New("not followed by a watch")

type followedOnlyKey struct{}

// FollowedOnly returns a context in which GetImage, GetNetwork and
// GetKeyPair answer only from the watches that follow those objects,
// making no request: an object no watch follows is ErrNotFollowed. A
// guard that checks them again on each change uses it, so an API server
// that is briefly unreachable is not taken for a deleted object.
func FollowedOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, followedOnlyKey{}, true)
}

// readFollowed reads the object ns/name of gvr once per process: the first
// read opens a watch that streams its state (one request), and later reads
// answer from that watch. Where the credential may not watch the kind, or
// the server does not stream, it gets the object instead, every time.
func (a *API) readFollowed(ctx context.Context, op string, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	key := gvr.Resource + " " + ref(ns, name)
	if f := a.seen.followedObject(key); f != nil {
		if u, ok := f.current(); ok {
			return presentOr(u, gvr, name)
		}
	}
	if ctx.Value(followedOnlyKey{}) != nil {
		return nil, fmt.Errorf("%s: %w", op, ErrNotFollowed)
	}
	if a.unreachable == nil && a.seen.mayWatch(gvr, ns) {
		f, err := a.openFollow(ctx, op, gvr, ns, name)
		if err == nil {
			a.seen.addFollowed(key, f)
			u, _ := f.current()
			return presentOr(u, gvr, name)
		}
		if !errors.Is(err, kubeapi.ErrWatchEnded) {
			return nil, err
		}
		if apierrors.IsForbidden(err) {
			a.seen.denyWatch(gvr)
		}
	}
	return do(ctx, a, op, func(c context.Context) (*unstructured.Unstructured, error) {
		return a.dyn.Resource(gvr).Namespace(ns).Get(c, name, metav1.GetOptions{})
	})
}

// openFollow opens the watch of ns/name. It lasts until StopFollowing,
// past ctx and the call's deadline (which bounds only the initial state).
func (a *API) openFollow(ctx context.Context, op string, gvr schema.GroupVersionResource, ns, name string) (*followed, error) {
	k := kubeapi.KindOf(gvr.Resource, &unstructured.Unstructured{}, a.dyn.Resource(gvr).Namespace(ns))
	initial := a.streamTimeout()
	s, err := kubeapi.OpenNamedStream(context.WithoutCancel(ctx), k, name, initial)
	if err != nil {
		err = a.Explain(op, err)
		a.noteUnreachable(err)
		return nil, err
	}
	f := &followed{stream: s}
	for _, it := range s.Items {
		if u, ok := it.(*unstructured.Unstructured); ok {
			f.obj = u
		}
	}
	go f.follow(a.seen.changedChan())
	return f, nil
}

// presentOr is u, or the API server's NotFound for the object called name.
func presentOr(u *unstructured.Unstructured, gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, error) {
	if u == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return u, nil
}

// decodeInto converts an object read through the dynamic client into T.
func decodeInto[T any](u *unstructured.Unstructured, what string) (*T, error) {
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", what, err)
	}
	return &out, nil
}

// The follows of Seen: the followed objects, the channel that tells of
// their changes, and what the credential may watch.

func (s *Seen) followedObject(key string) *followed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.follows[key]
}

func (s *Seen) addFollowed(key string, f *followed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.follows == nil {
		s.follows = map[string]*followed{}
	}
	if old := s.follows[key]; old != nil {
		old.stream.Stop()
	}
	s.follows[key] = f
}

func (s *Seen) changedChan() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{}, 1)
	}
	return s.changed
}

// FollowedChanged tells (at most one pending signal) that an object read
// with GetImage, GetNetwork or GetKeyPair changed, or its watch ended:
// reading it again costs no request unless the watch ended.
func (s *Seen) FollowedChanged() <-chan struct{} { return s.changedChan() }

// StopFollowing ends the watches of the objects read once, and a VMI
// stream no wait took; later reads read them again.
func (s *Seen) StopFollowing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.follows {
		f.stream.Stop()
	}
	s.follows = nil
	s.heldVMI.stream.Stop()
	s.heldVMI = heldStream{}
}

// heldStream is a streamed watch of one object (ns/name) kept for the
// process's next wait for it.
type heldStream struct {
	ns, name string
	stream   *kubeapi.Stream
}

func (s *Seen) holdVMIStream(ns, name string, stream *kubeapi.Stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heldVMI.stream.Stop()
	s.heldVMI = heldStream{ns: ns, name: name, stream: stream}
}

// TakeVMIStream hands the held watch of the VMI ns/name (ReadVMIForWait)
// to a wait, once; nil when none is held.
func (s *Seen) TakeVMIStream(ns, name string) *kubeapi.Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.heldVMI
	if h.stream == nil || h.ns != ns || h.name != name {
		return nil
	}
	s.heldVMI = heldStream{}
	return h.stream
}

// RememberRules keeps the rules a SelfSubjectRulesReview of ns returned,
// so that no watch the credential may not make is tried.
func (s *Seen) RememberRules(ns string, review *authv1.SubjectRulesReviewStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rules == nil {
		s.rules = map[string]*authv1.SubjectRulesReviewStatus{}
	}
	s.rules[ns] = review
}

// mayWatch: a watch of gvr in ns is worth trying (not refused already,
// and not denied by complete rules of ns).
func (s *Seen) mayWatch(gvr schema.GroupVersionResource, ns string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchDenied[gvr.GroupResource()] {
		return false
	}
	r := s.rules[ns]
	return r == nil || r.Incomplete || driverrights.RulesAllow(r.ResourceRules, driverrights.Permission{Verb: "watch", Group: gvr.Group, Resource: gvr.Resource})
}

func (s *Seen) denyWatch(gvr schema.GroupVersionResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchDenied == nil {
		s.watchDenied = map[schema.GroupResource]bool{}
	}
	s.watchDenied[gvr.GroupResource()] = true
}
