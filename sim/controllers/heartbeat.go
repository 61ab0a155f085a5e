// Stand-in for the kubelet, Kubernetes v1.34.4: the kubelet's node Lease and
// Ready condition. It follows
// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/nodestatus/setters.go.

package controllers

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Kubelet heartbeats as kubelet's defaults make them: the node Lease in
// kube-node-lease is renewed every 10 s (a quarter of its 40 s duration),
// and the Node's Ready condition is posted again when it is not True or
// its heartbeat is older than nodeStatusReportFrequency (5 min).
const (
	NodeLeaseNamespace   = corev1.NamespaceNodeLease
	leaseDurationSeconds = 40
	leaseRenewInterval   = 10 * time.Second
	nodeStatusReport     = 5 * time.Minute
)

// runHeartbeats renews the up hosts' Leases and Ready conditions until
// ctx ends.
func (s *sim) runHeartbeats(ctx context.Context) {
	tick := time.NewTimer(s.leaseRenew())
	defer tick.Stop()
	for {
		nodes, _ := s.nodes.List(labels.Everything())
		for _, n := range nodes {
			if s.hosts.Host(n.Name).Down() {
				continue
			}
			if err := s.heartbeat(ctx, n); err != nil && ctx.Err() == nil {
				s.log.Warn("kubelet heartbeat", "node", n.Name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.hosts.wake:
		}
		tick.Reset(s.leaseRenew()) // the grace period may have changed
	}
}

// heartbeat renews the host's Lease (creating it, owned by the Node, as
// kubelet does) and, when due, its Ready condition.
func (s *sim) heartbeat(ctx context.Context, n *corev1.Node) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := metav1.NewMicroTime(time.Now())
	leases := s.kube.CoordinationV1().Leases(NodeLeaseNamespace)
	lease, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = leases.Create(ctx, nodeLease(n, now), metav1.CreateOptions{})
	case err == nil:
		lease.Spec.RenewTime = &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", NodeLeaseNamespace, n.Name, err)
	}
	if err := s.postReady(ctx, n); err != nil {
		return err
	}
	return s.virtHandlerBeat(ctx, n)
}

// nodeLease is kubelet's Lease for node n.
func nodeLease(n *corev1.Node, now metav1.MicroTime) *coordinationv1.Lease {
	holder, duration := n.Name, int32(leaseDurationSeconds)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: NodeLeaseNamespace, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now},
	}
}

// LeaseRenewInterval is how often the kubelets renew their Lease for
// kube-controller-manager's --node-monitor-grace-period: kubelet's 10 s,
// or a quarter of a shorter grace period (as kubelet's own quarter of its
// 40 s Lease), so a host that is up never looks stale.
func LeaseRenewInterval(grace time.Duration) time.Duration {
	return min(leaseRenewInterval, grace/4)
}

// kubeletConditions are the conditions kubelet posts for a healthy host,
// with its reasons; the node lifecycle controller sets them Unknown (and
// adds the pressure ones) when the host stops reporting.
var kubeletConditions = map[corev1.NodeConditionType]struct {
	status          corev1.ConditionStatus
	reason, message string
}{
	corev1.NodeReady:          {corev1.ConditionTrue, "KubeletReady", "simulated host is ready"},
	corev1.NodeMemoryPressure: {corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
	corev1.NodeDiskPressure:   {corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
	corev1.NodePIDPressure:    {corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
}

// postReady posts the host's kubelet conditions (Ready True, no pressure)
// with a fresh heartbeat when one of them says otherwise or Ready's
// heartbeat is older than nodeStatusReport.
func (s *sim) postReady(ctx context.Context, n *corev1.Node) error {
	now := metav1.Now()
	node := n.DeepCopy()
	due := false
	for i, c := range node.Status.Conditions {
		want, ok := kubeletConditions[c.Type]
		if !ok {
			continue
		}
		stale := c.Type == corev1.NodeReady && now.Sub(c.LastHeartbeatTime.Time) >= nodeStatusReport
		if c.Status == want.status && !stale {
			continue
		}
		due = true
		cond := &node.Status.Conditions[i]
		if c.Status != want.status {
			cond.LastTransitionTime = now
		}
		cond.Status, cond.Reason, cond.Message, cond.LastHeartbeatTime = want.status, want.reason, want.message, now
	}
	if !due {
		return nil
	}
	_, err := s.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("post Ready of node %s: %w", n.Name, err)
	}
	return nil
}
