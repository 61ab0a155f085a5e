package kubeapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Every client this project builds retries transient failures inside its
// transport (see tune), within the deadline of the request's context: a
// kube-apiserver restarting, or an etcd leader election, costs a call some
// time, never its result.
//
// What is retried depends on whether the server can have acted on the
// request:
//   - never reached the server (connection refused, a TLS handshake the
//     server never completed), or refused before any
//     work (429 Too Many Requests, 503 Service Unavailable, 500 with
//     "etcdserver: leader changed": the write was dropped): every method;
//   - cut off in flight (connection reset, EOF, HTTP/2 connection lost) or
//     any other 5xx: only methods a second attempt cannot harm (GET, HEAD,
//     PUT, which carries the resourceVersion it read, DELETE, whose
//     NotFound callers count as done). POST and PATCH are not resent then:
//     the server may have applied them, and their callers see the error.
const (
	// retryFirstDelay doubles with each attempt up to retryMaxDelay; a
	// server's Retry-After is honoured up to retryMaxDelay.
	retryFirstDelay = 100 * time.Millisecond
	retryMaxDelay   = 2 * time.Second
	// RetryBudget bounds the retries of a request whose context has no
	// deadline (watches; their reflector retries on its own after that).
	RetryBudget = 30 * time.Second
	// leaderChanged is etcd's answer when its leader changed under a
	// request; kube-apiserver passes it on as a 500.
	leaderChanged = "etcdserver: leader changed"
	// peekLimit is how much of a 500's body is read to look for leaderChanged.
	peekLimit = 64 << 10
)

// ErrTLSHandshakeStalled matches (errors.Is) a request that failed after
// the server accepted connections but never completed the TLS handshake.
// Such a stall is retried like a refused connection (the server never saw
// the request), so the request's deadline ends it, not the transport's
// fixed handshake timeout (client-go's 10 s).
var ErrTLSHandshakeStalled = errors.New("the server accepted the connection but did not complete the TLS handshake")

// tlsHandshakeTimeout is the text of net/http's (unexported) error.
const tlsHandshakeTimeout = "TLS handshake timeout"

// stalledError is a request's final error once a TLS handshake stalled.
type stalledError struct{ err error }

func (e *stalledError) Error() string {
	return e.err.Error() + " (" + ErrTLSHandshakeStalled.Error() + ")"
}

func (e *stalledError) Unwrap() []error { return []error{e.err, ErrTLSHandshakeStalled} }

// retryTransport resends requests that failed transiently.
type retryTransport struct {
	next  http.RoundTripper
	sleep func(ctx context.Context, d time.Duration) error
}

// WithRetries wraps a transport so that it retries transient failures (see
// above); it is what tune installs as rest.Config.WrapTransport.
func WithRetries(next http.RoundTripper) http.RoundTripper {
	return &retryTransport{next: next, sleep: sleepCtx}
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	start := time.Now()
	attempt := req
	stalled := false
	fail := func(resp *http.Response, err error) (*http.Response, error) {
		if stalled && err != nil {
			return resp, &stalledError{err: err}
		}
		return resp, err
	}
	for n := 0; ; n++ {
		resp, err := t.next.RoundTrip(attempt)
		stalled = stalled || (err != nil && strings.Contains(err.Error(), tlsHandshakeTimeout))
		retryAfter, transient := classify(req.Method, resp, err)
		if !transient {
			return fail(resp, err)
		}
		delay := backoff(n, retryAfter)
		if !mayWait(ctx, start, delay) {
			return fail(resp, err)
		}
		next, rerr := rewind(req)
		if rerr != nil {
			return fail(resp, err)
		}
		discard(resp)
		if serr := t.sleep(ctx, delay); serr != nil {
			return fail(nil, serr)
		}
		attempt = next
	}
}

// classify says whether the outcome of one attempt is worth another, and
// the server's Retry-After (0 if none).
func classify(method string, resp *http.Response, err error) (time.Duration, bool) {
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return 0, false
		case utilnet.IsConnectionRefused(err), strings.Contains(err.Error(), tlsHandshakeTimeout):
			return 0, true
		case utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err), utilnet.IsHTTP2ConnectionLost(err):
			return 0, replayable(method)
		}
		return 0, false
	}
	after := retryAfterOf(resp)
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable:
		return after, true
	case code == http.StatusInternalServerError && bodyContains(resp, leaderChanged):
		return after, true
	case code >= 500:
		return after, replayable(method)
	}
	return 0, false
}

// replayable: a second attempt of the method cannot do harm even if the
// server acted on the first.
func replayable(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func backoff(n int, retryAfter time.Duration) time.Duration {
	d := retryFirstDelay << min(n, 5)
	d = max(d, retryAfter)
	return min(d, retryMaxDelay)
}

// mayWait reports whether another attempt after delay still fits in the
// request's deadline (or, without one, in RetryBudget).
func mayWait(ctx context.Context, start time.Time, delay time.Duration) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = start.Add(RetryBudget)
	}
	return ctx.Err() == nil && time.Now().Add(delay).Before(deadline)
}

// rewind copies the request with a fresh body for another attempt.
func rewind(req *http.Request) (*http.Request, error) {
	next := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return next, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("request body cannot be replayed")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	next.Body = body
	return next, nil
}

func retryAfterOf(resp *http.Response) time.Duration {
	secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || secs < 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// bodyContains reads (at most peekLimit of) the body to look for s and
// puts what it read back, so the caller still gets the whole answer.
func bodyContains(resp *http.Response, s string) bool {
	if resp.Body == nil {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, peekLimit))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return err == nil && bytes.Contains(head, []byte(s))
}

func discard(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, peekLimit))
		resp.Body.Close()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
