package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

// eventSource is the component named on the events, as KubeVirt does.
const eventSource = "virtualmachine-controller"

// eventSink writes core/v1 Events asynchronously so reconcilers never
// block on them.
type eventSink struct {
	kube kubernetes.Interface
	log  *slog.Logger
	ch   chan *corev1.Event
}

func newEventSink(kube kubernetes.Interface, log *slog.Logger) *eventSink {
	return &eventSink{kube: kube, log: log, ch: make(chan *corev1.Event, 1024)}
}

// emit records an event about obj (any object with apiVersion and kind).
func (e *eventSink) emit(obj *unstructured.Unstructured, eventType, reason, message string) {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", obj.GetName(), now.UnixNano()),
			Namespace: obj.GetNamespace(),
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(),
			Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(),
		},
		Reason: reason, Message: message, Type: eventType,
		Source:         corev1.EventSource{Component: eventSource},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "harvester-sim/" + eventSource,
		ReportingInstance:   "harvester-sim",
	}
	select {
	case e.ch <- ev:
	default:
		e.log.Warn("event dropped: sink full", "reason", reason, "object", obj.GetName())
	}
}

func (e *eventSink) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-e.ch:
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if _, err := e.kube.CoreV1().Events(ev.Namespace).Create(cctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				e.log.Warn("write event", "reason", ev.Reason, "object", ev.InvolvedObject.Name, "err", err)
			}
			cancel()
		}
	}
}
