package driver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/harvester-kit/harvester-machine/driver"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	imageGVR   = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "virtualmachineimages"}
	keyPairGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "keypairs"}
	networkGVR = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
)

// flagValues implements drivers.DriverOptions: the driver's defaults, then
// the given flags (what rancher-machine hands the plugin).
type flagValues map[string]any

func (o flagValues) String(k string) string        { s, _ := o[k].(string); return s }
func (o flagValues) StringSlice(k string) []string { s, _ := o[k].([]string); return s }
func (o flagValues) Int(k string) int              { i, _ := o[k].(int); return i }
func (o flagValues) Bool(k string) bool            { b, _ := o[k].(bool); return b }

// copyFixture copies the simulator's fixture gvr default/from to
// default/to (spec only; the simulator's controllers fill the status) and
// waits until cond accepts the copy.
func copyFixture(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, from, to string, cond func(*unstructured.Unstructured) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ri := dyn.Resource(gvr).Namespace(namespace)
	src, err := ri.Get(ctx, from, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": src.GetAPIVersion(), "kind": src.GetKind(), "spec": src.Object["spec"]}}
	obj.SetName(to)
	if gvr == imageGVR {
		// Harvester's image validator refuses a second image with the
		// display name of another in the namespace (its controller labels
		// each image harvesterhci.io/imageDisplayName).
		if err := unstructured.SetNestedField(obj.Object, to, "spec", "displayName"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Harvester's finalizers keep a deleted image for a while, and its
	// validator refuses a new image whose display name a terminating one
	// still holds: the next copy waits until this one is gone.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := ri.Delete(ctx, to, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s: %v", gvr.Resource, to, err)
			return
		}
		waitGone(ctx, t, dyn, gvr, to)
	})
	if err := simtest.WaitObject(ctx, dyn, gvr, namespace, to, cond); err != nil {
		t.Fatal(err)
	}
}

// condition reports the status of a Harvester condition of obj.
func condition(obj *unstructured.Unstructured, typ string) string {
	if obj == nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// TestChangedBetweenPreCreateAndCreate runs the driver's PreCreateCheck and
// Create the way rancher-machine does, one after the other in one driver,
// against the simulator, and changes Harvester in between: the image
// deleted or no longer imported, the network deleted, the key pair no
// longer validated. Create fails naming the cause, and leaves nothing.
func TestChangedBetweenPreCreateAndCreate(t *testing.T) {
	t.Parallel()
	dyn := dynAdmin
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	imported := func(u *unstructured.Unstructured) bool { return condition(u, "Imported") == "True" }
	validated := func(u *unstructured.Unstructured) bool { return condition(u, "validated") == "True" }
	cases := []struct {
		name   string
		change func(t *testing.T)
		want   string
	}{
		{"image deleted", func(t *testing.T) {
			if err := dyn.Resource(imageGVR).Namespace(namespace).Delete(ctx, "e2e-window-img", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitGone(ctx, t, dyn, imageGVR, "e2e-window-img")
		}, "image default/e2e-window-img does not exist"},
		{"image not imported", func(t *testing.T) {
			patch := []byte(`{"metadata":{"annotations":{"sim.harvesterhci.io/import":"fail"}}}`)
			if _, err := dyn.Resource(imageGVR).Namespace(namespace).Patch(ctx, "e2e-window-img", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			waitCond(ctx, t, dyn, imageGVR, "e2e-window-img", func(u *unstructured.Unstructured) bool { return condition(u, "Imported") == "False" })
		}, "image default/e2e-window-img is not imported (condition Imported is not True: simulated import failure"},
		{"network deleted", func(t *testing.T) {
			if err := dyn.Resource(networkGVR).Namespace(namespace).Delete(ctx, "e2e-window-net", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitGone(ctx, t, dyn, networkGVR, "e2e-window-net")
		}, "network default/e2e-window-net does not exist"},
		// Harvester's webhook refuses an invalid public key (its keypair
		// validator) and its controller validates a key once, while it has
		// no fingerprint: what turns a key pair not validated is a status
		// written so, which nothing of Harvester's rewrites.
		{"key pair not validated", func(t *testing.T) {
			patch := []byte(`{"status":{"conditions":[{"type":"validated","status":"False","reason":"revoked by the e2e test"}]}}`)
			if _, err := dyn.Resource(keyPairGVR).Namespace(namespace).Patch(ctx, "e2e-window-key", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			waitCond(ctx, t, dyn, keyPairGVR, "e2e-window-key", func(u *unstructured.Unstructured) bool { return condition(u, "validated") == "False" })
		}, "--harvester-key-pair-name: key pair default/e2e-window-key is not validated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newRM(t, "e2e-window") // its cleanup checks nothing of the cluster is left
			copyFixture(t, dyn, imageGVR, "ubuntu-22.04", "e2e-window-img", imported)
			copyFixture(t, dyn, networkGVR, "vlan1", "e2e-window-net", func(u *unstructured.Unstructured) bool { return u != nil })
			copyFixture(t, dyn, keyPairGVR, "sim-key", "e2e-window-key", validated)
			d := newInProcessDriver(t, "e2e-window-pool1-w0000", flagValues{
				config.FlagImageName: "default/e2e-window-img", config.FlagNetworkName: "default/e2e-window-net",
				config.FlagKeyPairName: "default/e2e-window-key", config.FlagSSHPrivateKeyPath: filepath.Join(sim.Dir, "sim-key"),
			})
			if err := d.PreCreateCheck(); err != nil {
				t.Fatalf("pre-create check: %v", err)
			}
			c.change(t)
			// Create sees the change from the watch the pre-create check
			// opened: before it makes anything, or, when the change
			// reaches the driver a moment later, once it has begun (and
			// removes what it made; newRM's cleanup checks that).
			err := d.Create()
			if err == nil || !strings.Contains(err.Error(), c.want) ||
				!strings.Contains(err.Error(), "nothing was created") && !errors.Is(err, machine.ErrInputChanged) {
				t.Fatalf("create after %s: %v, want an error with %q, before anything was created or after the create began", c.name, err, c.want)
			}
		})
	}
}

// newInProcessDriver configures the driver for machine name as
// rancher-machine does: flag defaults, then values, in a fresh store.
func newInProcessDriver(t *testing.T, name string, values flagValues) *driver.Driver {
	t.Helper()
	d := driver.New()
	store := t.TempDir()
	d.MachineName, d.StorePath = name, store
	if err := os.MkdirAll(filepath.Join(store, "machines", name), 0o700); err != nil {
		t.Fatal(err)
	}
	opts := flagValues{}
	for _, f := range d.GetCreateFlags() {
		opts[f.String()] = f.Default()
	}
	opts[config.FlagKubeconfigContent] = kubeconfig
	opts[config.FlagClusterName] = "e2e-window"
	for k, v := range values {
		opts[k] = v
	}
	if err := d.SetConfigFromFlags(opts); err != nil {
		t.Fatal(err)
	}
	return d
}

func waitGone(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, name string) {
	t.Helper()
	waitCond(ctx, t, dyn, gvr, name, simtest.Gone)
}

func waitCond(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, name string, cond func(*unstructured.Unstructured) bool) {
	t.Helper()
	if err := simtest.WaitObject(ctx, dyn, gvr, namespace, name, cond); err != nil {
		t.Fatal(err)
	}
}
