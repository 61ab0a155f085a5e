package controllers

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// acknowledgeFaults records on the fault ConfigMap which data the
// controllers act on (fault.AnnotationObserved), so `harvester-sim fault`
// returns only once a pattern is in effect. It runs after the cache holds
// obj; the annotation is patched alone, so it never conflicts with writers.
func (s *sim) acknowledgeFaults(ctx context.Context, obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	digest := fault.Digest(cm.Data)
	if cm.Annotations[fault.AnnotationObserved] == digest {
		return
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{fault.AnnotationObserved: digest}}})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = s.kube.CoreV1().ConfigMaps(fault.Namespace).Patch(ctx, fault.ConfigMap, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		s.log.Debug("cannot acknowledge the fault patterns", "configmap", fault.ConfigMapKey, "error", err)
	}
}

// syncStuckScheduling puts the stuck-scheduling patterns into effect: a
// policy refusing the binding of their launcher Pods (sim/fault/stuck.go).
func (s *sim) syncStuckScheduling(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	if err := fault.SyncStuckScheduling(ctx, s.kube, s.faults().StuckPatterns()); err != nil {
		s.log.Warn("fault stuck-scheduling", "err", err)
	}
}
