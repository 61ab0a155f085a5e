package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// PruneKinds are every kind the add-ons have ever contained; objects of
// these kinds with the add-on labels that are no longer rendered get deleted.
var PruneKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Group: "storage.k8s.io", Version: "v1", Kind: "CSIDriver"},
	{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"},
}

// Guest applies add-ons to a guest cluster with server-side apply.
type Guest struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	Log     *slog.Logger
}

// NewGuest connects to a guest cluster.
func NewGuest(cfg *rest.Config, log *slog.Logger) (*Guest, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to guest cluster: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to guest cluster: %w", err)
	}
	return &Guest{Dynamic: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), Log: log}, nil
}

// ApplyResult lists what happened to each object ("Kind ns/name").
type ApplyResult struct {
	Created, Configured, Unchanged, Pruned []string
}

func objectID(gvk schema.GroupVersionKind, ns, name string) string {
	if ns == "" {
		return gvk.Kind + " " + name
	}
	return gvk.Kind + " " + ns + "/" + name
}

func (g *Guest) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, bool, error) {
	m, err := g.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, false, fmt.Errorf("map %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return g.Dynamic.Resource(m.Resource).Namespace(ns), true, nil
	}
	return g.Dynamic.Resource(m.Resource), false, nil
}

// Apply server-side applies objs (field manager harvester-bootstrap,
// forced), then prunes labelled add-on objects no longer in objs unless
// prune is false. dryRun asks the API server to validate without persisting.
// An object counts as accepted when the API server has stored it; the
// function re-reads each one to confirm.
func (g *Guest) Apply(ctx context.Context, objs []runtime.Object, prune, dryRun bool) (ApplyResult, error) {
	var res ApplyResult
	want := map[string]bool{}
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
	}
	for _, obj := range objs {
		m, err := addons.ToMap(obj)
		if err != nil {
			return res, err
		}
		u := &unstructured.Unstructured{Object: m}
		gvk := u.GroupVersionKind()
		id := objectID(gvk, u.GetNamespace(), u.GetName())
		want[id] = true
		ri, _, err := g.resource(gvk, u.GetNamespace())
		if err != nil {
			return res, fmt.Errorf("apply %s: %w", id, err)
		}
		before := ""
		if cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
			before = cur.GetResourceVersion()
		} else if !apierrors.IsNotFound(err) {
			return res, fmt.Errorf("apply %s: %w", id, err)
		}
		body, err := json.Marshal(u.Object)
		if err != nil {
			return res, fmt.Errorf("apply %s: %w", id, err)
		}
		after, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: addons.FieldManager, Force: ptr.To(true), DryRun: dry})
		if err != nil {
			return res, fmt.Errorf("apply %s: %w", id, err)
		}
		switch {
		case before == "":
			res.Created = append(res.Created, id)
		case before != after.GetResourceVersion():
			res.Configured = append(res.Configured, id)
		default:
			res.Unchanged = append(res.Unchanged, id)
		}
		if !dryRun {
			if _, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
				return res, fmt.Errorf("confirm %s: %w", id, err)
			}
		}
	}
	if prune {
		pruned, err := g.prune(ctx, want, dry)
		res.Pruned = pruned
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func (g *Guest) prune(ctx context.Context, want map[string]bool, dry []string) ([]string, error) {
	var pruned []string
	var errs []error
	for _, gvk := range PruneKinds {
		m, err := g.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue // kind not served by this cluster: nothing of ours there
		}
		list, err := g.Dynamic.Resource(m.Resource).List(ctx, metav1.ListOptions{LabelSelector: addons.PruneSelector})
		if err != nil {
			errs = append(errs, fmt.Errorf("prune: list %s: %w", m.Resource.Resource, err))
			continue
		}
		for _, item := range list.Items {
			id := objectID(gvk, item.GetNamespace(), item.GetName())
			if want[id] {
				continue
			}
			ri, _, _ := g.resource(gvk, item.GetNamespace())
			uid := item.GetUID()
			err := ri.Delete(ctx, item.GetName(), metav1.DeleteOptions{DryRun: dry, Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("prune %s: %w", id, err))
				continue
			}
			g.Log.Info("pruned", "object", id)
			pruned = append(pruned, id)
		}
	}
	sort.Strings(pruned)
	return pruned, errors.Join(errs...)
}
