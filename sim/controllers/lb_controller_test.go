package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

func TestSetCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	conds := setCondition(nil, lbapi.ConditionReady, corev1.ConditionFalse, "no running backend servers", t0)
	if len(conds) != 1 || conds[0].LastTransitionTime != "2026-01-01T00:00:00Z" {
		t.Fatalf("new condition = %+v", conds)
	}
	same := setCondition(conds, lbapi.ConditionReady, corev1.ConditionFalse, "no running backend servers", t0.Add(time.Minute))
	if same[0] != conds[0] {
		t.Fatalf("an unchanged condition got new timestamps: %+v", same[0])
	}
	msg := setCondition(same, lbapi.ConditionReady, corev1.ConditionFalse, "other", t0.Add(time.Minute))
	if msg[0].LastTransitionTime != conds[0].LastTransitionTime || msg[0].LastUpdateTime == conds[0].LastUpdateTime {
		t.Fatalf("message change: %+v (transition kept, update time new)", msg[0])
	}
	ready := setCondition(append(msg, lbapi.Condition{Type: "Other", Status: "True"}), lbapi.ConditionReady, corev1.ConditionTrue, "", t0.Add(2*time.Minute))
	if len(ready) != 2 || ready[0].Status != "True" || ready[0].Message != "" || ready[0].LastTransitionTime != "2026-01-01T00:02:00Z" || ready[1].Type != "Other" {
		t.Fatalf("status change: %+v", ready)
	}
}
