package sim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestLatestNodeEventSameSecond: an event the API stores to the second is
// found by a command that started earlier in that same second (the flake
// "no reason recorded" of TestMaintenanceWithPoolOverThreeHosts), and an
// event of an earlier second is not.
func TestLatestNodeEventSameSecond(t *testing.T) {
	started := time.Date(2026, 11, 26, 23, 0, 5, 700_000_000, time.UTC)
	event := func(name, msg string, at time.Time) *corev1.Event {
		ts := metav1.NewTime(at.Truncate(time.Second))
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ts},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "harvester-node-2"},
			Reason:         "MaintenanceModeRefused", Message: msg, LastTimestamp: ts,
		}
	}
	kube := fake.NewClientset(event("old", "an earlier refusal", started.Add(-2*time.Second)))
	if got := latestNodeEvent(context.Background(), kube, "harvester-node-2", "MaintenanceModeRefused", started); got != "" {
		t.Errorf("only an event of an earlier second: got %q, want none", got)
	}
	if _, err := kube.CoreV1().Events("default").Create(context.Background(),
		event("now", "refused now", started.Add(200*time.Millisecond)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := latestNodeEvent(context.Background(), kube, "harvester-node-2", "MaintenanceModeRefused", started); got != "refused now" {
		t.Errorf("event of the command's own second: got %q, want %q", got, "refused now")
	}
}
