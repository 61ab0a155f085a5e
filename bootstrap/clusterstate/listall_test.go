package clusterstate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// guestServing is a guest API server that answers GET /api/v1/services
// with pages[continue token] and /api/v1/nodes with an empty NodeList.
func guestServing(t *testing.T, pages map[string]string) kubernetes.Interface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/nodes":
			_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`))
		case "/api/v1/services":
			if r.URL.Query().Get("limit") == "" {
				t.Errorf("Services listed without a page limit: %s", r.URL)
			}
			_, _ = w.Write([]byte(pages[r.URL.Query().Get("continue")]))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	k, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func svcJSON(name string) string {
	return `{"metadata":{"namespace":"default","name":"` + name + `","uid":"u-` + name + `"},"spec":{"type":"LoadBalancer"}}`
}

// Issue 33, item 6: gc reads every page and refuses an answer that is not
// a complete list.
func TestFetchGuestForGCListsCompletely(t *testing.T) {
	page := func(cont string, names ...string) string {
		var items []string
		for _, n := range names {
			items = append(items, svcJSON(n))
		}
		return `{"kind":"ServiceList","apiVersion":"v1","metadata":{"continue":"` + cont + `"},"items":[` + strings.Join(items, ",") + `]}`
	}
	g := FetchGuestForGC(context.Background(), guestServing(t, map[string]string{"": page("p2", "a", "b"), "p2": page("p3", "c"), "p3": page("", "d")}))
	var got []string
	for _, s := range g.Services {
		got = append(got, s.Name)
	}
	if strings.Join(got, ",") != "a,b,c,d" || len(g.Errors) != 0 {
		t.Errorf("Services %v, errors %v; want a,b,c,d from three pages", got, g.Errors)
	}
	for name, c := range map[string]struct{ pages map[string]string }{
		"{}":                 {map[string]string{"": `{}`}},
		"items: null":        {map[string]string{"": `{"kind":"ServiceList","apiVersion":"v1","metadata":{},"items":null}`}},
		"no items":           {map[string]string{"": `{"kind":"ServiceList","apiVersion":"v1","metadata":{}}`}},
		"another kind":       {map[string]string{"": `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`}},
		"no kind":            {map[string]string{"": `{"metadata":{},"items":[]}`}},
		"a later page is {}": {map[string]string{"": page("p2", "a"), "p2": `{}`}},
		"a token repeats":    {map[string]string{"": page("p2", "a"), "p2": page("p2", "b")}},
		"not JSON":           {map[string]string{"": `<html>`}},
	} {
		t.Run(name, func(t *testing.T) {
			g := FetchGuestForGC(context.Background(), guestServing(t, c.pages))
			if g.Errors[KindService] == "" || g.Services != nil {
				t.Errorf("Services %v, error %q; want no Services and an error", g.Services, g.Errors[KindService])
			}
		})
	}
}
