package controllers

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// getCached returns a deep copy of a cached custom object, or nil.
func getCached(l cache.GenericLister, ns, name string) *unstructured.Unstructured {
	obj, err := l.ByNamespace(ns).Get(name)
	if err != nil {
		return nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return u.DeepCopy()
}

// looseStatus decodes the status stanza without strictness: the status is
// the simulator's own output, and a spec problem must not hide it.
func looseStatus(u *unstructured.Unstructured, into any) {
	m, ok, _ := unstructured.NestedMap(u.Object, "status")
	if !ok {
		return
	}
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// writeStatus sends a new status for u through the status subresource
// unless it equals old (either may be a pointer). A conflict comes back as an error, so the key is
// retried against a fresh cache.
func (s *sim) writeStatus(ctx context.Context, gvr schema.GroupVersionResource, u *unstructured.Unstructured, old, status any) (*unstructured.Unstructured, error) {
	oldV, newV := reflect.Indirect(reflect.ValueOf(old)), reflect.Indirect(reflect.ValueOf(status))
	if equality.Semantic.DeepEqual(oldV.Interface(), newV.Interface()) {
		return u, nil
	}
	ptr := reflect.New(newV.Type())
	ptr.Elem().Set(newV)
	m, err := toUnstructured(ptr.Interface())
	if err != nil {
		return nil, err
	}
	out := u.DeepCopy()
	out.Object["status"] = m
	ri := s.dyn.Resource(gvr).Namespace(u.GetNamespace())
	var res *unstructured.Unstructured
	if gvr == gvrVMI || gvr == gvrImage {
		// KubeVirt's VMI and Harvester's image have no status subresource:
		// status is written with the object.
		res, err = ri.Update(ctx, out, metav1.UpdateOptions{})
	} else {
		res, err = ri.UpdateStatus(ctx, out, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("update status of %s %s/%s: %w", gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	return res, nil
}

// updateMeta applies mutate to the live object and updates it, retrying
// on conflicts with a fresh read. mutate returns false when nothing
// changed.
func (s *sim) updateMeta(ctx context.Context, gvr schema.GroupVersionResource, ns, name string,
	mutate func(u *unstructured.Unstructured) bool) (*unstructured.Unstructured, error) {
	var res *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !mutate(cur) {
			res = cur
			return nil
		}
		res, err = s.dyn.Resource(gvr).Namespace(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update %s %s/%s: %w", gvr.Resource, ns, name, err)
	}
	return res, nil
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func without(list []string, s string) []string {
	var out []string
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

func retryConflict(fn func() error) error { return retry.RetryOnConflict(retry.DefaultRetry, fn) }
