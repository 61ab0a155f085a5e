package restapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// call is one request the test server saw.
type call struct {
	method, path, query, contentType string
	body                             map[string]any
}

// server answers every request with the reply registered for
// "METHOD path" (status and JSON body) and records the request.
type server struct {
	mu      sync.Mutex
	calls   []call
	replies map[string]reply
}

type reply struct {
	status int
	body   string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := call{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, contentType: r.Header.Get("Content-Type")}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &c.body)
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	rep, ok := s.replies[r.Method+" "+r.URL.Path]
	s.mu.Unlock()
	if !ok {
		rep = reply{http.StatusNotFound, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found"}`}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

func (s *server) last(t *testing.T) call {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		t.Fatal("no request reached the server")
	}
	return s.calls[len(s.calls)-1]
}

func newTestClient(t *testing.T, replies map[string]reply) (*Client, *server) {
	t.Helper()
	s := &server{replies: replies}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c, err := New(&rest.Config{Host: ts.URL, QPS: 50, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestGetDecodesTypedObjects(t *testing.T) {
	c, s := newTestClient(t, map[string]reply{
		"GET /api/v1/namespaces/ns1/secrets/s1":                       {200, `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s1","namespace":"ns1","uid":"u1"},"data":{"k":"dg=="}}`},
		"GET /apis/kubevirt.io/v1/namespaces/ns1/virtualmachines/vm1": {200, `{"kind":"VirtualMachine","apiVersion":"kubevirt.io/v1","metadata":{"name":"vm1"},"spec":{"runStrategy":"Always"}}`},
		"GET /apis/storage.k8s.io/v1/storageclasses/sc1":              {200, `{"kind":"StorageClass","apiVersion":"storage.k8s.io/v1","metadata":{"name":"sc1"},"provisioner":"p"}`},
	})
	sec, err := c.Secrets("ns1").Get(ctxT(t), "s1", metav1.GetOptions{})
	if err != nil || sec.UID != "u1" || string(sec.Data["k"]) != "v" {
		t.Fatalf("get Secret = %+v, %v", sec, err)
	}
	vm, err := c.VirtualMachines("ns1").Get(ctxT(t), "vm1", metav1.GetOptions{})
	if err != nil || vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy != kubevirtv1.RunStrategyAlways {
		t.Fatalf("get VM = %+v, %v", vm, err)
	}
	sc, err := c.StorageClasses().Get(ctxT(t), "sc1", metav1.GetOptions{})
	if err != nil || sc.Provisioner != "p" {
		t.Fatalf("get StorageClass = %+v, %v", sc, err)
	}
	ns, err := c.Namespaces().Get(ctxT(t), "missing", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing namespace: %v, want NotFound", err)
	}
	if ns == nil || ns.GetLabels() != nil {
		t.Errorf("get of a missing namespace returned %v, want an empty object (as client-go's clients do)", ns)
	}
	if got := s.last(t).path; got != "/api/v1/namespaces/missing" {
		t.Errorf("namespace path %q", got)
	}
	if l, err := c.Events("missing").List(ctxT(t), metav1.ListOptions{}); !apierrors.IsNotFound(err) || l == nil {
		t.Errorf("list in a missing namespace = %v, %v; want an empty list and NotFound", l, err)
	}
}

func TestWritesSendTypedBodies(t *testing.T) {
	c, s := newTestClient(t, map[string]reply{
		"POST /apis/kubevirt.io/v1/namespaces/ns1/virtualmachines":          {201, `{"kind":"VirtualMachine","apiVersion":"kubevirt.io/v1","metadata":{"name":"vm1","uid":"u2"}}`},
		"PUT /apis/kubevirt.io/v1/namespaces/ns1/virtualmachines/vm1":       {200, `{"kind":"VirtualMachine","apiVersion":"kubevirt.io/v1","metadata":{"name":"vm1","resourceVersion":"2"}}`},
		"PATCH /api/v1/namespaces/ns1/secrets/s1":                           {200, `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s1"}}`},
		"DELETE /api/v1/namespaces/ns1/persistentvolumeclaims/p1":           {200, `{"kind":"Status","apiVersion":"v1","status":"Success"}`},
		"POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews":       {201, `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":true}}`},
		"POST /api/v1/namespaces/ns1/serviceaccounts/sa1/token":             {201, `{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"2030-01-01T00:00:00Z"}}`},
		"PATCH /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/crb1": {200, `{"kind":"ClusterRoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"crb1"}}`},
	})
	ctx := ctxT(t)
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns1"}}
	got, err := c.VirtualMachines("ns1").Create(ctx, vm, metav1.CreateOptions{})
	if err != nil || got.UID != "u2" {
		t.Fatalf("create VM = %+v, %v", got, err)
	}
	if b := s.last(t).body; b["kind"] != "VirtualMachine" || b["apiVersion"] != "kubevirt.io/v1" {
		t.Errorf("create body names %v %v, want VirtualMachine kubevirt.io/v1", b["kind"], b["apiVersion"])
	}
	if got, err := c.VirtualMachines("ns1").Update(ctx, vm, metav1.UpdateOptions{}); err != nil || got.ResourceVersion != "2" {
		t.Fatalf("update VM = %+v, %v", got, err)
	}
	if _, err := c.Secrets("ns1").Patch(ctx, "s1", types.MergePatchType, []byte(`{"metadata":{"uid":"u"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if ct := s.last(t).contentType; ct != string(types.MergePatchType) {
		t.Errorf("patch content type %q", ct)
	}
	if _, err := c.ClusterRoleBindings().Patch(ctx, "crb1", types.ApplyPatchType, []byte(`{}`), metav1.PatchOptions{FieldManager: "fm"}); err != nil {
		t.Fatal(err)
	}
	if q := s.last(t).query; q != "fieldManager=fm" {
		t.Errorf("apply query %q, want fieldManager=fm", q)
	}
	uid := types.UID("u3")
	if err := c.PersistentVolumeClaims("ns1").Delete(ctx, "p1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatal(err)
	}
	if pre, _ := s.last(t).body["preconditions"].(map[string]any); pre["uid"] != "u3" {
		t.Errorf("delete body %v, want the UID precondition", s.last(t).body)
	}
	review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{Verb: "get"}}}
	if res, err := c.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{}); err != nil || !res.Status.Allowed {
		t.Fatalf("access review = %+v, %v", res, err)
	}
	tok, err := c.ServiceAccounts("ns1").CreateToken(ctx, "sa1", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil || tok.Status.Token != "t" {
		t.Fatalf("token = %+v, %v", tok, err)
	}
}

func TestListAndWatch(t *testing.T) {
	events := `{"type":"ADDED","object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s1","resourceVersion":"5"}}}` + "\n" +
		`{"type":"DELETED","object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s1","resourceVersion":"6"}}}` + "\n"
	c, s := newTestClient(t, map[string]reply{
		"GET /api/v1/namespaces/ns1/secrets": {200, `{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"4"},"items":[{"metadata":{"name":"s1"}}]}`},
	})
	list, err := c.Secrets("ns1").List(ctxT(t), metav1.ListOptions{LabelSelector: "a=b"})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion != "4" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if q := s.last(t).query; q != "labelSelector=a%3Db" {
		t.Errorf("list query %q", q)
	}
	s.replies["GET /api/v1/namespaces/ns1/secrets"] = reply{200, events}
	w, err := c.Secrets("ns1").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "4"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		sec, ok := ev.Object.(*corev1.Secret)
		if !ok {
			t.Fatalf("watch event object %T", ev.Object)
		}
		got = append(got, string(ev.Type)+" "+sec.Name+"@"+sec.ResourceVersion)
	}
	if want := string(watch.Added) + " s1@5," + string(watch.Deleted) + " s1@6"; strings.Join(got, ",") != want {
		t.Errorf("watch events %v, want %s", got, want)
	}
	if q := s.last(t).query; !strings.Contains(q, "watch=true") || !strings.Contains(q, "resourceVersion=4") {
		t.Errorf("watch query %q", q)
	}
}
