package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// TestPlanNodeDown walks Harvester v1.8's node-down rules as
// node_down_controller.go states them: Unknown for period s -> the taint
// kubevirt.io/drain:NoSchedule (no value) and Drained False; Drained False
// for vmMigrationTimeout s -> node.kubernetes.io/out-of-service:NoExecute
// (no value) and Drained True; Ready True -> both taints and the
// condition go; Ready False and a disabled policy change nothing.
func TestPlanNodeDown(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ago := func(s int) metav1.Time { return metav1.NewTime(now.Add(-time.Duration(s) * time.Second)) }
	policy := hv.VMForceResetPolicy{Enable: true, Period: 15, VMMigrationTimeout: 180}
	node := func(ready corev1.ConditionStatus, readySince int, drained corev1.ConditionStatus, drainedSince int, taints ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "harvester-node-1"}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastTransitionTime: ago(readySince)}}
		if drained != "" {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "Drained", Status: drained, LastTransitionTime: ago(drainedSince)})
		}
		for _, k := range taints {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule})
		}
		return n
	}
	const drain, oos = "kubevirt.io/drain", "node.kubernetes.io/out-of-service"
	cases := []struct {
		name    string
		node    *corev1.Node
		policy  hv.VMForceResetPolicy
		want    nodeDownPlan
		wantErr string
	}{
		{"Unknown 5s of 15: wait 10s", node(corev1.ConditionUnknown, 5, "", 0), policy, nodeDownPlan{requeue: 10 * time.Second}, ""},
		{"Unknown 15s: drain taint, Drained False", node(corev1.ConditionUnknown, 15, "", 0), policy,
			nodeDownPlan{addTaint: &corev1.Taint{Key: drain, Effect: corev1.TaintEffectNoSchedule}, drained: corev1.ConditionFalse}, ""},
		{"drained 100s of 180: wait 80s", node(corev1.ConditionUnknown, 115, corev1.ConditionFalse, 100, drain), policy, nodeDownPlan{requeue: 80 * time.Second}, ""},
		{"drained 180s: out-of-service, Drained True", node(corev1.ConditionUnknown, 195, corev1.ConditionFalse, 180, drain), policy,
			nodeDownPlan{addTaint: &corev1.Taint{Key: oos, Effect: corev1.TaintEffectNoExecute}, drained: corev1.ConditionTrue}, ""},
		{"both taints, Drained still False: Drained True", node(corev1.ConditionUnknown, 300, corev1.ConditionFalse, 200, drain, oos), policy,
			nodeDownPlan{drained: corev1.ConditionTrue}, ""},
		{"both taints, Drained True: nothing", node(corev1.ConditionUnknown, 300, corev1.ConditionTrue, 100, drain, oos), policy, nodeDownPlan{}, ""},
		{"Ready False (kubelet reports): nothing", node(corev1.ConditionFalse, 999, "", 0), policy, nodeDownPlan{}, ""},
		{"disabled policy: nothing", node(corev1.ConditionUnknown, 999, "", 0), hv.VMForceResetPolicy{Period: 1}, nodeDownPlan{}, ""},
		{"Ready again: remove", node(corev1.ConditionTrue, 1, corev1.ConditionTrue, 10, drain, oos), policy, nodeDownPlan{removeTaints: true}, ""},
		{"Ready, only the condition left: remove", node(corev1.ConditionTrue, 1, corev1.ConditionTrue, 10), policy, nodeDownPlan{removeTaints: true}, ""},
		{"Ready, nothing of it: nothing", node(corev1.ConditionTrue, 1, "", 0), policy, nodeDownPlan{}, ""},
		{"someone else's drain taint, no condition", node(corev1.ConditionUnknown, 999, "", 0, drain), policy, nodeDownPlan{}, "no Drained condition"},
		{"no Ready condition", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, policy, nodeDownPlan{}, "can't find Ready condition"},
	}
	for _, c := range cases {
		got, err := planNodeDown(c.node, c.policy, nil, now)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.requeue != c.want.requeue || got.removeTaints != c.want.removeTaints || got.drained != c.want.drained ||
			(got.addTaint == nil) != (c.want.addTaint == nil) || (got.addTaint != nil && *got.addTaint != *c.want.addTaint) {
			t.Errorf("%s: plan %+v (taint %v), want %+v (taint %v)", c.name, got, got.addTaint, c.want, c.want.addTaint)
		}
	}
	// A setting that does not parse stops the controller only for a down host.
	if _, err := planNodeDown(node(corev1.ConditionUnknown, 99, "", 0), policy, errors.New("bad"), now); err == nil {
		t.Error("a bad setting is not reported for a down host")
	}
	if _, err := planNodeDown(node(corev1.ConditionTrue, 99, "", 0), policy, errors.New("bad"), now); err != nil {
		t.Errorf("a bad setting stops a healthy host: %v", err)
	}
}

// TestSetDrained: Harvester's SetNodeStatusCondition moves the transition
// time only when the status changes (the out-of-service deadline counts
// from Drained False).
func TestSetDrained(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	n := &corev1.Node{}
	setDrained(n, corev1.ConditionFalse, t0)
	setDrained(n, corev1.ConditionFalse, t1)
	c := nodeCondition(n, "Drained")
	if c == nil || c.LastTransitionTime != t0 || c.LastHeartbeatTime != t1 || c.Reason != "HarvesterNodeIsDraining" {
		t.Fatalf("after False twice: %+v", c)
	}
	setDrained(n, corev1.ConditionTrue, t1)
	c = nodeCondition(n, "Drained")
	if c.Status != corev1.ConditionTrue || c.LastTransitionTime != t1 || c.Reason != "HarvesterNodeIsDrained" || len(n.Status.Conditions) != 1 {
		t.Fatalf("after True: %+v", n.Status.Conditions)
	}
}
