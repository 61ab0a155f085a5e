package kubevirt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// fieldManager is whose fields the created objects are: virt-operator's.
const fieldManager = "virt-operator"

// readObjects decodes a YAML stream of objects.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// applier creates objects of any kind the API server serves, as
// virt-operator does on a fresh cluster (a server-side apply of KubeVirt's
// CRDs, megabytes of schema, costs seconds more). Every simulator run
// starts clean: an object already there is left as it is.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(disc discovery.DiscoveryInterface, dyn dynamic.Interface) *applier {
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// applyFiles creates every object of the files, in order, and returns
// them.
func (a *applier) applyFiles(ctx context.Context, paths ...string) ([]*unstructured.Unstructured, error) {
	var all []*unstructured.Unstructured
	for _, p := range paths {
		objs, err := readObjects(p)
		if err != nil {
			return nil, fmt.Errorf("kubevirt: %w", err)
		}
		for _, o := range objs {
			if err := a.apply(ctx, o); err != nil {
				return nil, fmt.Errorf("kubevirt: create %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
		all = append(all, objs...)
	}
	return all, nil
}

func (a *applier) apply(ctx context.Context, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) { // a kind served since the last discovery
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	unstructured.RemoveNestedField(o.Object, "status")
	_, err = ri.Create(ctx, o, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// lastLines is the end of a command's output, for an error message.
func lastLines(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}
