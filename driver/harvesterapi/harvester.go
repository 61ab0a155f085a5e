package harvesterapi

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func getDynamic[T any](ctx context.Context, a *API, op string, gvr schema.GroupVersionResource, ns, name string) (*T, error) {
	return do(ctx, a, op, func(c context.Context) (*T, error) {
		r := a.dyn.Resource(gvr)
		get := r.Get
		if ns != "" {
			get = r.Namespace(ns).Get
		}
		u, err := get(c, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var out T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &out); err != nil {
			return nil, fmt.Errorf("decode %s: %w", gvr.Resource, err)
		}
		return &out, nil
	})
}

// ServerVersion returns Harvester's Setting server-version: its value is
// the version, its UID identifies the cluster.
func (a *API) ServerVersion(ctx context.Context) (*Setting, error) {
	return getDynamic[Setting](ctx, a, "read Harvester setting "+ServerVerID, GVRSetting, "", ServerVerID)
}

// GetSetting reads a Harvester setting.
func (a *API) GetSetting(ctx context.Context, name string) (*Setting, error) {
	return getDynamic[Setting](ctx, a, "read Harvester setting "+name, GVRSetting, "", name)
}

// GetImage reads an image once per process (see Seen).
func (a *API) GetImage(ctx context.Context, ns, name string) (*Image, error) {
	op := "get image " + ref(ns, name)
	return readOnce(&a.seen, op, func() (*Image, error) { return getDynamic[Image](ctx, a, op, GVRImage, ns, name) })
}

// GetKeyPair reads a key pair once per process (see Seen).
func (a *API) GetKeyPair(ctx context.Context, ns, name string) (*KeyPair, error) {
	op := "get key pair " + ref(ns, name)
	return readOnce(&a.seen, op, func() (*KeyPair, error) { return getDynamic[KeyPair](ctx, a, op, GVRKeyPair, ns, name) })
}

// GetNetwork checks that the network attachment definition exists and
// returns its labels (managed DHCP labels the networks it serves).
func (a *API) GetNetwork(ctx context.Context, ns, name string) (map[string]string, error) {
	u, err := do(ctx, a, "get network "+ref(ns, name), func(c context.Context) (*unstructured.Unstructured, error) {
		return a.dyn.Resource(GVRNetwork).Namespace(ns).Get(c, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return u.GetLabels(), nil
}
