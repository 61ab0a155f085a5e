package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// StopVM is `virtctl stop`, which Harvester's upgrade script runs
// (package/upgrade/upgrade_node.sh, for `harvester-sim upgrade`):
// spec.runStrategy Halted.
func StopVM(ctx context.Context, dyn dynamic.Interface, ns, name string) error {
	vms := dyn.Resource(gvrVM).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := vms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if rs, _, _ := unstructured.NestedString(cur.Object, "spec", "runStrategy"); rs == string(kubevirtv1.RunStrategyHalted) {
			return nil
		}
		_ = unstructured.SetNestedField(cur.Object, string(kubevirtv1.RunStrategyHalted), "spec", "runStrategy")
		unstructured.RemoveNestedField(cur.Object, "spec", "running")
		_, err = vms.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("stop vm %s/%s: %w", ns, name, err)
	}
	return nil
}
