package controllers

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/sim/tunables"
)

// tuned is the timing the controllers run with now.
func (s *sim) tuned() tunables.Values { return *s.timing.Load() }

// leaseRenew is how often the kubelets renew their Lease now.
func (s *sim) leaseRenew() time.Duration {
	if g := s.tuned().NodeMonitorGracePeriod; g > 0 {
		return LeaseRenewInterval(g)
	}
	return leaseRenewInterval
}

// tuneTimeout bounds applying one content of the tunables ConfigMap: a new
// grace period starts kube-controller-manager again.
const tuneTimeout = 2 * time.Minute

// runTunables applies the tunables ConfigMap's content, the latest each
// time it is woken, until ctx ends. Over the start timing each key present
// replaces its value; a content it refuses changes nothing. Each content is
// acknowledged on the ConfigMap (tunables.AnnotationObserved, or
// AnnotationRefused with the reason), so `harvester-sim tune` returns once
// it is in effect.
func (s *sim) runTunables(ctx context.Context, wake <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		cm, err := s.faultInformers.Core().V1().ConfigMaps().Lister().ConfigMaps(tunables.Namespace).Get(tunables.ConfigMap)
		var data map[string]string
		if err == nil {
			data = cm.Data
		}
		tctx, cancel := context.WithTimeout(ctx, tuneTimeout)
		applyErr := s.applyTunables(tctx, data)
		if cm != nil {
			s.acknowledgeTunables(tctx, cm, applyErr)
		}
		cancel()
	}
}

// applyTunables makes the controllers, and kube-controller-manager for
// the grace period, run with the start timing with data over it.
func (s *sim) applyTunables(ctx context.Context, data map[string]string) error {
	next, err := tunables.Over(s.opts.Timing, data)
	if err != nil {
		return err
	}
	now := s.tuned()
	if next == now {
		return nil
	}
	if next.NodeMonitorGracePeriod != now.NodeMonitorGracePeriod && s.opts.SetNodeGrace != nil {
		if err := s.opts.SetNodeGrace(ctx, next.NodeMonitorGracePeriod); err != nil {
			return err
		}
	}
	s.timing.Store(&next)
	s.hosts.wakeUp() // the Lease's renewal interval follows the grace period
	s.log.Info("tunables applied", "timing", next)
	return nil
}

// acknowledgeTunables records on the ConfigMap the content applied, or
// why it was refused. The annotations are patched alone, so the patch
// never conflicts with writers.
func (s *sim) acknowledgeTunables(ctx context.Context, cm *corev1.ConfigMap, applyErr error) {
	digest := tunables.Digest(cm.Data)
	_, refused := cm.Annotations[tunables.AnnotationRefused]
	if applyErr == nil && !refused && cm.Annotations[tunables.AnnotationObserved] == digest {
		return
	}
	notes := map[string]any{tunables.AnnotationObserved: digest, tunables.AnnotationRefused: nil}
	if applyErr != nil {
		notes = map[string]any{tunables.AnnotationRefused: digest + ": " + applyErr.Error()}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": notes}})
	if err != nil {
		return
	}
	_, err = s.kube.CoreV1().ConfigMaps(tunables.Namespace).Patch(ctx, tunables.ConfigMap, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		s.log.Warn("cannot acknowledge the tunables", "configmap", tunables.Namespace+"/"+tunables.ConfigMap, "err", err)
	}
}
