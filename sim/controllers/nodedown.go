package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Harvester v1.8's node-down controller
// (pkg/controller/master/node/node_down_controller.go), played on the
// simulator's hosts. It only taints: kube-controller-manager's own
// taint-eviction and pod GC controllers act on the taints.

var (
	taintDrain        = corev1.Taint{Key: hv.TaintKubeVirtDrain, Effect: corev1.TaintEffectNoSchedule}
	taintOutOfService = corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
)

// nodeDownPlan is what the controller does to one Node.
type nodeDownPlan struct {
	addTaint     *corev1.Taint
	removeTaints bool // both taints and the Drained condition go
	// drained, when set, is the Drained condition's new status, written
	// after the taint.
	drained corev1.ConditionStatus
	// requeue: look again after this long (a deadline not reached).
	requeue time.Duration
}

// planNodeDown decides, by the source's rules, what Harvester does to a
// Node: policy is the setting read as it is now (an error when it does
// not parse). Ready False is left alone (only Unknown, what the node
// lifecycle controller sets for a host that stopped reporting, counts),
// so is a disabled policy. A drain taint without the Drained condition
// (someone else's taint) is an error: the real controller dereferences
// the missing condition and crashes.
func planNodeDown(node *corev1.Node, policy hv.VMForceResetPolicy, policyErr error, now time.Time) (nodeDownPlan, error) {
	ready := nodeCondition(node, corev1.NodeReady)
	if ready == nil {
		return nodeDownPlan{}, fmt.Errorf("can't find %s condition in node %s", corev1.NodeReady, node.Name)
	}
	switch ready.Status {
	case corev1.ConditionFalse:
		return nodeDownPlan{}, nil
	case corev1.ConditionTrue:
		if hasTaint(node, taintDrain.Key) || hasTaint(node, taintOutOfService.Key) || nodeCondition(node, hv.NodeConditionDrained) != nil {
			return nodeDownPlan{removeTaints: true}, nil
		}
		return nodeDownPlan{}, nil
	case corev1.ConditionUnknown:
	default:
		return nodeDownPlan{}, fmt.Errorf("unknown status %s for condition %s in node %s", ready.Status, corev1.NodeReady, node.Name)
	}
	if policyErr != nil {
		return nodeDownPlan{}, fmt.Errorf("failed to fetch VMForceResetPolicy setting: %w", policyErr)
	}
	if !policy.Enable {
		return nodeDownPlan{}, nil
	}
	drained := nodeCondition(node, hv.NodeConditionDrained)
	hasDrain, hasOOS := hasTaint(node, taintDrain.Key), hasTaint(node, taintOutOfService.Key)
	if hasDrain && drained == nil {
		return nodeDownPlan{}, fmt.Errorf("node %s has taint %s but no %s condition: Harvester's node-down controller fails on it (nil condition)",
			node.Name, taintDrain.Key, hv.NodeConditionDrained)
	}
	switch {
	case hasDrain && hasOOS:
		if drained.Status == corev1.ConditionFalse {
			return nodeDownPlan{drained: corev1.ConditionTrue}, nil
		}
		return nodeDownPlan{}, nil
	case !hasDrain:
		if wait := ready.LastTransitionTime.Add(time.Duration(policy.Period) * time.Second).Sub(now); wait > 0 {
			return nodeDownPlan{requeue: wait}, nil
		}
		return nodeDownPlan{addTaint: &taintDrain, drained: corev1.ConditionFalse}, nil
	default: // drain taint, no out-of-service taint yet
		if wait := drained.LastTransitionTime.Add(time.Duration(policy.VMMigrationTimeout) * time.Second).Sub(now); wait > 0 {
			return nodeDownPlan{requeue: wait}, nil
		}
		return nodeDownPlan{addTaint: &taintOutOfService, drained: corev1.ConditionTrue}, nil
	}
}

func nodeCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// setDrained sets the Drained condition as Harvester's
// util.SetNodeStatusCondition does: the transition time changes only
// with the status, the heartbeat always.
func setDrained(node *corev1.Node, status corev1.ConditionStatus, now metav1.Time) {
	reason := hv.ReasonDraining
	if status == corev1.ConditionTrue {
		reason = hv.ReasonDrained
	}
	if c := nodeCondition(node, hv.NodeConditionDrained); c != nil {
		if c.Status != status {
			c.Status, c.LastTransitionTime = status, now
		}
		c.LastHeartbeatTime, c.Reason, c.Message = now, reason, hv.MessageDrained
		return
	}
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
		Type: hv.NodeConditionDrained, Status: status, Reason: reason, Message: hv.MessageDrained,
		LastTransitionTime: now, LastHeartbeatTime: now,
	})
}

// forceResetPolicy reads vm-force-reset-policy from the cache as
// Harvester's settings provider does: the value, else the default, and
// Harvester's built-in default when the Setting does not exist.
func (s *sim) forceResetPolicy() (hv.VMForceResetPolicy, error) {
	value := hv.DefaultVMForceResetPolicy
	if obj, err := s.settings.Get(hv.SettingVMForceResetPolicy); err == nil { // cluster scoped: no namespace in the key
		u, _ := obj.(*unstructured.Unstructured)
		v, _, _ := unstructured.NestedString(u.UnstructuredContent(), "value")
		d, _, _ := unstructured.NestedString(u.UnstructuredContent(), "default")
		value = hv.SettingValue(v, d)
	}
	return hv.DecodeVMForceResetPolicy(value)
}

// reconcileNodeDown applies planNodeDown to a host: the taint first (an
// update of the Node), then the Drained condition (a status update), as
// the real controller writes them.
func (s *sim) reconcileNodeDown(ctx context.Context, name string) (time.Duration, error) {
	cached, err := s.kubeInformers.Core().V1().Nodes().Lister().Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil || cached.DeletionTimestamp != nil {
		return 0, err
	}
	policy, policyErr := s.forceResetPolicy()
	plan, err := planNodeDown(cached, policy, policyErr, time.Now())
	if err != nil || plan.requeue > 0 {
		return plan.requeue, err
	}
	node := cached.DeepCopy()
	nodes := s.kube.CoreV1().Nodes()
	now := metav1.Now()
	switch {
	case plan.removeTaints:
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
			return t.Key == taintDrain.Key || t.Key == taintOutOfService.Key
		})
		if len(kept) != len(node.Spec.Taints) {
			node.Spec.Taints = kept
			if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
				return 0, fmt.Errorf("failed to remove taints from node %s: %w", name, err)
			}
			s.log.Info("node-down: host Ready again, taints removed", "node", name)
		}
		if nodeCondition(node, hv.NodeConditionDrained) != nil {
			node.Status.Conditions = slices.DeleteFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == hv.NodeConditionDrained })
			if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
				return 0, fmt.Errorf("failed to reset the %s condition of node %s: %w", hv.NodeConditionDrained, name, err)
			}
		}
		return 0, nil
	case plan.addTaint != nil:
		node.Spec.Taints = append(node.Spec.Taints, *plan.addTaint)
		if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("failed to add taint %s to node %s: %w", plan.addTaint.Key, name, err)
		}
		s.log.Info("node-down: host tainted", "node", name, "taint", plan.addTaint.Key+":"+string(plan.addTaint.Effect))
	}
	if plan.drained != "" {
		setDrained(node, plan.drained, now)
		if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("failed to set the %s condition of node %s: %w", hv.NodeConditionDrained, name, err)
		}
	}
	return 0, nil
}

// registerNodeDown feeds every Node change to the node-down queue, as the
// real controller's OnChange (the setting is read, not watched: a new
// policy applies the next time a Node is looked at).
func (s *sim) registerNodeDown() error {
	s.settings = s.dynInformers.ForResource(gvrSetting).Lister()
	_, err := s.kubeInformers.Core().V1().Nodes().Informer().AddEventHandler(handler(func(obj any) {
		if key, _ := keyOf(obj); key != "" {
			s.nodeDownQ.add(key)
		}
	}))
	if err != nil {
		return fmt.Errorf("start sim controllers: watch nodes for the node-down controller: %w", err)
	}
	return nil
}
