package controllers

import (
	"context"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// reconcileHarvesterVMI is Harvester v1.8's VMI controller
// ReconcileFromHostLabels (pkg/controller/master/virtualmachine/vmi_controller.go):
// a VMI labelled harvesterhci.io/creator=docker-machine-driver-harvester
// carries its host's topology labels (zone, region, hostname) as
// annotations; one the host lacks is removed.
func (s *sim) reconcileHarvesterVMI(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.vmis, ns, name)
	if u == nil || u.GetDeletionTimestamp() != nil || u.GetLabels()[hv.LabelCreator] != hv.CreatorNodeDriver {
		return 0, nil
	}
	nodeName, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
	node, err := s.kubeInformers.Core().V1().Nodes().Lister().Get(nodeName)
	if err != nil {
		return 0, nil //nolint:nilerr // Harvester: no such node, nothing to copy
	}
	want := topologyAnnotations(u.GetAnnotations(), node.Labels)
	if maps.Equal(want, u.GetAnnotations()) {
		return 0, nil
	}
	_, err = s.updateMeta(ctx, gvrVMI, ns, name, func(cur *unstructured.Unstructured) bool {
		if cur.GetUID() != u.GetUID() {
			return false
		}
		next := topologyAnnotations(cur.GetAnnotations(), node.Labels)
		if maps.Equal(next, cur.GetAnnotations()) {
			return false
		}
		cur.SetAnnotations(next)
		return true
	})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}

// topologyAnnotations are ann with the host's topology labels copied in
// (and those the host lacks removed).
func topologyAnnotations(ann, hostLabels map[string]string) map[string]string {
	out := maps.Clone(ann)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelHostname} {
		if v, ok := hostLabels[k]; ok {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	return out
}
