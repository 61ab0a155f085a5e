package tunables

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// Set changes tunables while the simulator runs: each name in changes
// gets its value ("" gives it back its start flag's value). It returns
// once the simulator runs with the new values (a new grace period means
// a new kube-controller-manager), or with the simulator's reason when it
// refused them.
func Set(ctx context.Context, kube kubernetes.Interface, changes map[string]string) error {
	if err := CheckChanges(changes); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	want, err := fault.EditConfigMap(ctx, kube, ConfigMap, nil, func(data map[string]string) { edit(data, changes) })
	if err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	return waitApplied(ctx, kube, want)
}

// Reset gives each tunable named in changes its start value back (what
// Set changed, undone), and returns once the simulator runs with them.
func Reset(ctx context.Context, kube kubernetes.Interface, changes map[string]string) error {
	reset := make(map[string]string, len(changes))
	for name := range changes {
		reset[name] = ""
	}
	return Set(ctx, kube, reset)
}

// CheckChanges returns every problem with changes (as Set takes them).
func CheckChanges(changes map[string]string) error {
	_, err := Over(Values{NodeMonitorGracePeriod: MinNodeMonitorGracePeriod}, nonEmpty(changes))
	return err
}

// nonEmpty is changes without its removals.
func nonEmpty(changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range changes {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// edit makes changes to data: a value set, or removed when "".
func edit(data, changes map[string]string) {
	for k, v := range changes {
		if v == "" {
			delete(data, k)
		} else {
			data[k] = strings.TrimSpace(v)
		}
	}
}

// waitApplied waits until the simulator has acknowledged the data of
// digest want (or anything newer), or refused it.
func waitApplied(ctx context.Context, kube kubernetes.Interface, want string) error {
	cms := kubeapi.KindOf[*corev1.ConfigMapList]("ConfigMap", &corev1.ConfigMap{}, kube.CoreV1().ConfigMaps(Namespace))
	var refused error
	_, err := kubeapi.Wait(ctx, cms, Namespace, ConfigMap, 0, func(cm *corev1.ConfigMap) (bool, error) {
		if cm == nil {
			return true, nil // deleted meanwhile: every tunable has its start value
		}
		if digest, why, ok := strings.Cut(cm.Annotations[AnnotationRefused], ": "); ok && digest == want {
			refused = errors.New(why)
			return true, nil
		}
		seen := cm.Annotations[AnnotationObserved]
		return seen == want || seen == Digest(cm.Data), nil
	})
	switch {
	case refused != nil:
		return fmt.Errorf("tune: the simulator refused: %w", refused)
	case err != nil:
		return fmt.Errorf("tune: not applied by the simulator: %w", err)
	}
	return nil
}
