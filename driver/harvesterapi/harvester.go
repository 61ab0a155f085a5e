package harvesterapi

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		return decodeInto[T](u, gvr.Resource)
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

// GetImage reads an image once per process and follows its changes (see
// readFollowed).
func (a *API) GetImage(ctx context.Context, ns, name string) (*Image, error) {
	u, err := a.readFollowed(ctx, "get image "+ref(ns, name), GVRImage, ns, name)
	if err != nil {
		return nil, err
	}
	return decodeInto[Image](u, GVRImage.Resource)
}

// GetKeyPair reads a key pair once per process and follows its changes
// (see readFollowed).
func (a *API) GetKeyPair(ctx context.Context, ns, name string) (*KeyPair, error) {
	u, err := a.readFollowed(ctx, "get key pair "+ref(ns, name), GVRKeyPair, ns, name)
	if err != nil {
		return nil, err
	}
	return decodeInto[KeyPair](u, GVRKeyPair.Resource)
}

// GetNetwork checks that the network attachment definition exists and
// returns its labels (managed DHCP labels the networks it serves); it reads
// the network once per process and follows its changes (see readFollowed).
func (a *API) GetNetwork(ctx context.Context, ns, name string) (map[string]string, error) {
	u, err := a.readFollowed(ctx, "get network "+ref(ns, name), GVRNetwork, ns, name)
	if err != nil {
		return nil, err
	}
	return u.GetLabels(), nil
}
