package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// flaky is an API server that fails the first `fails` requests with fail
// and then answers with a ConfigMap; it records every request body.
type flaky struct {
	mu     sync.Mutex
	fails  int
	fail   func(w http.ResponseWriter)
	bodies []string
}

const configMapJSON = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","namespace":"ns"}}`

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	n := len(f.bodies)
	f.mu.Unlock()
	if n <= f.fails {
		f.fail(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	_, _ = io.WriteString(w, configMapJSON)
}

func (f *flaky) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func status(code int, message string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"code":%d}`, message, code)
	}
}

// reset cuts the connection without an answer.
func reset(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // RST instead of FIN
		}
		conn.Close()
	}
}

func kubeconfigFor(server string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: secret-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server))
}

// clientFor is a clientset built the way every tool builds one.
func clientFor(t *testing.T, server string) kubernetes.Interface {
	t.Helper()
	cfg, err := ConfigFromKubeconfig(kubeconfigFor(server), "retry-test")
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

func callCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func getCM(ctx context.Context, kube kubernetes.Interface) error {
	_, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
	return err
}

func createCM(ctx context.Context, kube kubernetes.Interface) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}
	_, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func TestRetriesTransientAnswers(t *testing.T) {
	leader := status(http.StatusInternalServerError, "etcdserver: leader changed")
	cases := map[string]struct {
		fail         func(http.ResponseWriter)
		call         func(context.Context, kubernetes.Interface) error
		fails        int
		wantAttempts int
		wantErr      func(error) bool
	}{
		"GET after 503s":              {status(503, "apiserver not ready"), getCM, 3, 4, nil},
		"GET after 429":               {status(429, "too many requests", "Retry-After", "1"), getCM, 1, 2, nil},
		"GET after 500s":              {status(500, "boom"), getCM, 2, 3, nil},
		"GET after 504":               {status(504, "gateway timeout"), getCM, 1, 2, nil},
		"GET after resets":            {reset, getCM, 2, 3, nil},
		"POST after 503":              {status(503, "apiserver not ready"), createCM, 2, 3, nil},
		"POST after 429":              {status(429, "too many requests"), createCM, 1, 2, nil},
		"POST after leader changes":   {leader, createCM, 2, 3, nil},
		"POST not resent after a 500": {status(500, "boom"), createCM, 1, 1, apierrors.IsInternalError},
		"POST not resent after reset": {reset, createCM, 1, 1, func(err error) bool { return err != nil }},
		"401 not retried":             {status(401, "Unauthorized"), getCM, 1, 1, apierrors.IsUnauthorized},
		"404 not retried":             {status(404, "not found"), getCM, 1, 1, apierrors.IsNotFound},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := &flaky{fails: c.fails, fail: c.fail}
			srv := httptest.NewServer(f)
			defer srv.Close()
			err := c.call(callCtx(t, 20*time.Second), clientFor(t, srv.URL))
			if c.wantErr == nil && err != nil {
				t.Fatalf("call failed: %v", err)
			}
			if c.wantErr != nil && !c.wantErr(err) {
				t.Fatalf("error %v is not the expected one", err)
			}
			if got := f.attempts(); got != c.wantAttempts {
				t.Errorf("%d attempts, want %d", got, c.wantAttempts)
			}
			for i, b := range f.bodies {
				if b != f.bodies[0] {
					t.Errorf("attempt %d sent body %q, the first %q", i+1, b, f.bodies[0])
				}
			}
		})
	}
}

// A server that is not listening yet (a kube-apiserver restarting) is
// waited for; a create is resent too, since it never reached the server.
func TestRetriesConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := &flaky{}
	srv := httptest.NewUnstartedServer(f)
	started := make(chan struct{})
	go func() {
		defer close(started)
		time.Sleep(700 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen again on %s: %v", addr, err)
			return
		}
		srv.Listener = l
		srv.Start()
	}()
	defer func() { <-started; srv.Close() }()
	kube := clientFor(t, "http://"+addr)
	begin := time.Now()
	if err := createCM(callCtx(t, 20*time.Second), kube); err != nil {
		t.Fatalf("create while the server was down: %v", err)
	}
	if waited := time.Since(begin); waited < 500*time.Millisecond {
		t.Errorf("returned after %s, before the server listened", waited)
	}
	if f.attempts() != 1 {
		t.Errorf("server saw %d attempts, want 1", f.attempts())
	}
}

// Retries end with the call's deadline, with the last answer.
func TestRetriesStopAtTheDeadline(t *testing.T) {
	f := &flaky{fails: 1 << 30, fail: status(503, "still not ready")}
	srv := httptest.NewServer(f)
	defer srv.Close()
	begin := time.Now()
	err := getCM(callCtx(t, 1500*time.Millisecond), clientFor(t, srv.URL))
	if err == nil || time.Since(begin) > 5*time.Second {
		t.Fatalf("after %s: %v, want a failure at the deadline", time.Since(begin), err)
	}
	if !apierrors.IsServiceUnavailable(err) && !strings.Contains(err.Error(), "deadline") {
		t.Errorf("error %v says neither the last answer nor the deadline", err)
	}
	if n := f.attempts(); n < 3 {
		t.Errorf("only %d attempts within the deadline", n)
	}
}

func TestBackoff(t *testing.T) {
	cases := []struct {
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{0, 0, 100 * time.Millisecond},
		{1, 0, 200 * time.Millisecond},
		{4, 0, 1600 * time.Millisecond},
		{9, 0, retryMaxDelay},
		{0, time.Second, time.Second},
		{0, time.Minute, retryMaxDelay},
	}
	for _, c := range cases {
		if got := backoff(c.n, c.retryAfter); got != c.want {
			t.Errorf("backoff(%d, %s) = %s, want %s", c.n, c.retryAfter, got, c.want)
		}
	}
}

// TestTLSHandshakeStallEndsAtTheDeadline: a server that accepts
// connections but never completes the TLS handshake fails a request at
// the request's deadline, not at the transport's handshake timeout, with
// an error saying so.
func TestTLSHandshakeStallEndsAtTheDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	accepted := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns, accepted = append(conns, c), accepted+1
			mu.Unlock()
		}
	}()
	const handshake = 100 * time.Millisecond
	rt := WithRetries(&http.Transport{TLSHandshakeTimeout: handshake})
	ctx, cancel := context.WithTimeout(context.Background(), 10*handshake)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+ln.Addr().String()+"/api", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("{}")), nil }
	start := time.Now()
	_, err = rt.RoundTrip(req)
	took := time.Since(start)
	if !errors.Is(err, ErrTLSHandshakeStalled) {
		t.Fatalf("got %v, want ErrTLSHandshakeStalled", err)
	}
	mu.Lock()
	n := accepted
	mu.Unlock()
	// Retried until the deadline: more than one handshake attempted, and
	// the request ended after the first handshake timeout.
	if n < 2 || took < 2*handshake {
		t.Errorf("%d connections in %s: the stall was not retried until the deadline", n, took)
	}
}
