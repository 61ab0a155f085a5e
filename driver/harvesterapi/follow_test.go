package harvesterapi

import (
	"context"
	"errors"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

func image(imported string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "harvesterhci.io/v1beta1", "kind": "VirtualMachineImage",
		"metadata": map[string]any{"name": "img", "namespace": "ns"},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Imported", "status": imported}}},
	}}
}

// fakeDyn is a fake dynamic client holding objs, its watches streaming
// their initial state as kube-apiserver's do, and the API over it.
type fakeDyn struct{ Dyn *dynfake.FakeDynamicClient }

func newFakeDyn(objs ...runtime.Object) fakeDyn {
	return fakeDyn{Dyn: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{GVRImage: "VirtualMachineImageList"}, objs...)}
}

func (h fakeDyn) API() *API {
	return FromClients(restapifake.Clients{Kube: kubefake.NewSimpleClientset(), Virt: virtfake.NewSimpleClientset()}, restapifake.Dynamic(h.Dyn), nil, Options{CallTimeout: 5 * time.Second})
}

// requests counts the dynamic client's requests by verb; a watch that
// streams its initial state is one request (the fake serves it from a
// list and a watch, counted as the watch).
func requests(h fakeDyn) map[string]int {
	out := map[string]int{}
	for _, a := range h.Dyn.Actions() {
		out[a.GetVerb()]++
	}
	out["list"] -= out["watch"]
	return out
}

func waitChanged(t *testing.T, api *API) {
	t.Helper()
	select {
	case <-api.Seen().FollowedChanged():
	case <-time.After(5 * time.Second):
		t.Fatal("no change told")
	}
}

// TestImageReadOnceThenFollowed: the first read of an image is one
// streamed watch; later reads cost no request and see its changes (no
// longer imported, then deleted), and are told of each.
func TestImageReadOnceThenFollowed(t *testing.T) {
	h := newFakeDyn(image("True"))
	api := h.API()
	defer api.Seen().StopFollowing()
	ctx := context.Background()
	img, err := api.GetImage(ctx, "ns", "img")
	if err != nil || img.Status.Conditions[0].Status != "True" {
		t.Fatalf("first read: %+v, %v", img, err)
	}
	if _, err := api.GetImage(ctx, "ns", "img"); err != nil {
		t.Fatal(err)
	}
	if got := requests(h); got["watch"] != 1 || got["get"] != 0 {
		t.Fatalf("requests %v, want one watch and no get", got)
	}
	if _, err := h.Dyn.Resource(GVRImage).Namespace("ns").Update(ctx, image("False"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, api)
	if img, err := api.GetImage(ctx, "ns", "img"); err != nil || img.Status.Conditions[0].Status != "False" {
		t.Fatalf("after the change: %+v, %v", img, err)
	}
	if err := h.Dyn.Resource(GVRImage).Namespace("ns").Delete(ctx, "img", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, api)
	if _, err := api.GetImage(ctx, "ns", "img"); !ObjectNotFound(err, "img") {
		t.Fatalf("after the delete: %v, want NotFound of img", err)
	}
	before := len(h.Dyn.Actions())
	api.Seen().StopFollowing()
	if _, err := api.GetImage(ctx, "ns", "img"); !ObjectNotFound(err, "img") {
		t.Fatalf("after StopFollowing: %v, want NotFound of img", err)
	}
	if len(h.Dyn.Actions()) == before {
		t.Error("a read after StopFollowing made no request")
	}
}

// TestFollowFallsBackToGet: a credential that may not watch images gets
// them (one get per read); rules that do not grant the watch skip it.
func TestFollowFallsBackToGet(t *testing.T) {
	t.Run("watch forbidden", func(t *testing.T) {
		h := newFakeDyn(image("True"))
		h.Dyn.PrependWatchReactor("virtualmachineimages", func(k8stesting.Action) (bool, watch.Interface, error) {
			return true, nil, apierrors.NewForbidden(GVRImage.GroupResource(), "", nil)
		})
		api := h.API()
		for range 2 {
			if _, err := api.GetImage(context.Background(), "ns", "img"); err != nil {
				t.Fatal(err)
			}
		}
		if got := requests(h); got["watch"] != 1 || got["get"] != 2 {
			t.Errorf("requests %v, want the refused watch once, then a get per read", got)
		}
	})
	t.Run("rules without watch", func(t *testing.T) {
		h := newFakeDyn(image("True"))
		api := h.API()
		api.Seen().RememberRules("ns", &authv1.SubjectRulesReviewStatus{ResourceRules: []authv1.ResourceRule{
			{Verbs: []string{"get"}, APIGroups: []string{"harvesterhci.io"}, Resources: []string{"virtualmachineimages"}}}})
		if _, err := api.GetImage(context.Background(), "ns", "img"); err != nil {
			t.Fatal(err)
		}
		if got := requests(h); got["watch"] != 0 || got["get"] != 1 {
			t.Errorf("requests %v, want one get and no watch", got)
		}
	})
}

// TestFollowedOnlyMakesNoRequest: in a FollowedOnly context an object no
// watch follows is ErrNotFollowed, without a request; a followed one
// answers from its watch.
func TestFollowedOnlyMakesNoRequest(t *testing.T) {
	h := newFakeDyn(image("True"))
	api := h.API()
	defer api.Seen().StopFollowing()
	only := FollowedOnly(context.Background())
	if _, err := api.GetImage(only, "ns", "img"); !errors.Is(err, ErrNotFollowed) {
		t.Fatalf("not followed yet: %v, want ErrNotFollowed", err)
	}
	if n := len(h.Dyn.Actions()); n != 0 {
		t.Fatalf("%d requests, want none", n)
	}
	if _, err := api.GetImage(context.Background(), "ns", "img"); err != nil {
		t.Fatal(err)
	}
	if img, err := api.GetImage(only, "ns", "img"); err != nil || img.Status.Conditions[0].Status != "True" {
		t.Fatalf("followed: %+v, %v", img, err)
	}
}
