// Stand-in for K3s's deploy controller, K3s v1.34.4+k3s1 (RKE2 embeds
// it): a guest cluster's auto-deploy manifests applied under an Addon. It follows
// https://github.com/k3s-io/k3s/blob/v1.34.4+k3s1/pkg/deploy/controller.go.

package guests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// AddonGVR is k3s.cattle.io/v1 addons.
var AddonGVR = schema.GroupVersionResource{Group: AddonGroup, Version: AddonVersion, Resource: "addons"}

// guest holds the clients of one guest cluster.
type guest struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	ext    apiextclient.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	ready  bool // K3s CRDs installed
}

func newGuest(cfg *rest.Config) (*guest, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ext, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &guest{kube: kube, dyn: dyn, ext: ext, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// k3sCRD is one of the CRDs K3s and RKE2 install at start (any field kept).
func k3sCRD(group, kind, plural string, columns ...apiextv1.CustomResourceColumnDefinition) *apiextv1.CustomResourceDefinition {
	preserve := true
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:                   &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
				AdditionalPrinterColumns: columns,
			}},
		},
	}
}

// k3sCRDs are the Addon CRD and the helm-controller's HelmChart and
// HelmChartConfig CRDs (RKE2's manifests hold HelmChartConfigs).
func k3sCRDs() []*apiextv1.CustomResourceDefinition {
	return []*apiextv1.CustomResourceDefinition{
		k3sCRD(AddonGroup, "Addon", AddonGVR.Resource,
			apiextv1.CustomResourceColumnDefinition{Name: "Source", Type: "string", JSONPath: ".spec.source"},
			apiextv1.CustomResourceColumnDefinition{Name: "Checksum", Type: "string", JSONPath: ".spec.checksum"}),
		k3sCRD("helm.cattle.io", "HelmChart", "helmcharts"),
		k3sCRD("helm.cattle.io", "HelmChartConfig", "helmchartconfigs"),
	}
}

// ensureCRDs installs the K3s CRDs and waits until Addons are served.
func (g *guest) ensureCRDs(ctx context.Context) error {
	if g.ready {
		return nil
	}
	crds := g.ext.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range k3sCRDs() {
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := g.dyn.Resource(AddonGVR).Namespace(AddonNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the Addon CRD is not served: %w", err)
	}
	g.mapper.Reset()
	g.ready = true
	return nil
}

// resource maps u's kind to its API, refreshing discovery once on a miss.
func (g *guest) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, schema.GroupVersionKind, error) {
	gvk := u.GroupVersionKind()
	m, err := g.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		g.mapper.Reset()
		m, err = g.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, gvk, fmt.Errorf("%s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace(AddonNamespace)
		}
		return g.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), gvk, nil
	}
	u.SetNamespace("")
	return g.dyn.Resource(m.Resource), gvk, nil
}

type objectRef struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// deploy applies one manifest file as K3s's deploy controller does, unless
// its Addon already records the same checksum: server-side apply of every
// object, then deletion of what the Addon's earlier version applied and
// this one no longer has, then the Addon itself.
func (g *guest) deploy(ctx context.Context, m Manifest) (bool, error) {
	addons := g.dyn.Resource(AddonGVR).Namespace(AddonNamespace)
	cur, err := addons.Get(ctx, m.Addon, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get Addon %s: %w", m.Addon, err)
	}
	if err == nil {
		if sum, _, _ := unstructured.NestedString(cur.Object, "spec", "checksum"); sum == m.Checksum {
			return false, nil
		}
	} else {
		cur = nil
	}
	objs, err := ParseObjects(m.Content)
	if err != nil {
		return false, fmt.Errorf("%s: %w", m.Path, err)
	}
	applied := map[objectRef]bool{}
	gvks := map[schema.GroupVersionKind]bool{}
	var errs []error
	for _, u := range objs {
		MarkOwned(u, m.Addon)
		ri, gvk, err := g.resource(u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		body, err := json.Marshal(u.Object)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		force := true
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: deployFieldManager, Force: &force}); err != nil {
			errs = append(errs, fmt.Errorf("apply %s %s: %w", gvk.Kind, u.GetName(), err))
			continue
		}
		if gvk.Kind == "CustomResourceDefinition" {
			g.mapper.Reset()
		}
		applied[objectRef{gvk, u.GetNamespace(), u.GetName()}] = true
		gvks[gvk] = true
	}
	if err := errors.Join(errs...); err != nil {
		return false, fmt.Errorf("%s: %w", m.Path, err)
	}
	for _, gvk := range previousGVKs(cur) {
		if err := g.prune(ctx, gvk, m.Addon, applied); err != nil {
			return false, fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	return true, g.writeAddon(ctx, cur, m, gvks)
}

// previousGVKs are the kinds an Addon's status says it applied.
func previousGVKs(addon *unstructured.Unstructured) []schema.GroupVersionKind {
	if addon == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(addon.Object, "status", "gvks")
	var out []schema.GroupVersionKind
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		g, _ := m["Group"].(string)
		v, _ := m["Version"].(string)
		k, _ := m["Kind"].(string)
		out = append(out, schema.GroupVersionKind{Group: g, Version: v, Kind: k})
	}
	return out
}

// prune deletes objects of gvk labelled as applied by addon that are not in keep.
func (g *guest) prune(ctx context.Context, gvk schema.GroupVersionKind, addon string, keep map[objectRef]bool) error {
	mapping, err := g.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil // the kind is gone, and with it its objects
	}
	list, err := g.dyn.Resource(mapping.Resource).List(ctx, metav1.ListOptions{LabelSelector: LabelObjectSetHash + "=" + ObjectSetHash(addon)})
	if err != nil {
		return fmt.Errorf("prune %s: %w", gvk.Kind, err)
	}
	for _, item := range list.Items {
		if keep[objectRef{gvk, item.GetNamespace(), item.GetName()}] {
			continue
		}
		ri := g.dyn.Resource(mapping.Resource).Namespace(item.GetNamespace())
		if err := ri.Delete(ctx, item.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("prune %s %s: %w", gvk.Kind, item.GetName(), err)
		}
	}
	return nil
}

// writeAddon records the applied file: spec source and checksum, status
// the kinds applied.
func (g *guest) writeAddon(ctx context.Context, cur *unstructured.Unstructured, m Manifest, gvks map[schema.GroupVersionKind]bool) error {
	var list []any
	for gvk := range gvks {
		list = append(list, map[string]any{"Group": gvk.Group, "Version": gvk.Version, "Kind": gvk.Kind})
	}
	sort.Slice(list, func(i, j int) bool { return fmt.Sprint(list[i]) < fmt.Sprint(list[j]) })
	addons := g.dyn.Resource(AddonGVR).Namespace(AddonNamespace)
	if cur == nil {
		cur = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": AddonGroup + "/" + AddonVersion, "kind": "Addon",
			"metadata": map[string]any{"name": m.Addon, "namespace": AddonNamespace},
		}}
	}
	cur.Object["spec"] = map[string]any{"source": m.Path, "checksum": m.Checksum}
	cur.Object["status"] = map[string]any{"gvks": list}
	var err error
	if cur.GetResourceVersion() == "" {
		_, err = addons.Create(ctx, cur, metav1.CreateOptions{})
	} else {
		_, err = addons.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("record Addon %s: %w", m.Addon, err)
	}
	return nil
}
