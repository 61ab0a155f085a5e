// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's heartbeat on
// its Node. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/heartbeat/heartbeat.go.

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// What virt-handler gives each host that is up (KubeVirt v1.7's
// pkg/virt-handler/heartbeat; its device plugins' resources are in the
// hosts' fixtures, sim/fixtures.go), about once a minute: the label
// kubevirt.io/schedulable=true, cpumanager=false and the annotation
// kubevirt.io/heartbeat (virt-controller marks a host whose heartbeat is
// over 5 minutes old unschedulable and fails its VMIs).
const handlerHeartbeatInterval = time.Minute

// virtHandlerBeat is one heartbeat of host n's virt-handler.
func (s *sim) virtHandlerBeat(ctx context.Context, n *corev1.Node) error {
	if err := s.ensureVirtHandler(ctx, n.Name); err != nil {
		return err
	}
	now := metav1.Now()
	if n.Labels[kubevirtv1.NodeSchedulable] == "true" && !s.hosts.Host(n.Name).handlerBeatDue(now.Time) {
		return nil
	}
	stamp, err := json.Marshal(now)
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true",%q:"false"},"annotations":{%q:%s}}}`,
		kubevirtv1.NodeSchedulable, kubevirtv1.CPUManager, kubevirtv1.VirtHandlerHeartbeat, stamp)
	handler, err := s.handlerClient(ctx)
	if err != nil {
		return nil //nolint:nilerr // KubeVirt is not installed yet; the next beat tries again
	}
	gvrNode := corev1.SchemeGroupVersion.WithResource("nodes")
	if _, err := handler.Resource(gvrNode).Patch(ctx, n.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("virt-handler: heartbeat of node %s: %w", n.Name, err)
	}
	return nil
}
