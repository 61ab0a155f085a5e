package controllers

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// TestReadInformersStarted: the informers the controllers read without a
// queue of their own (the hosts' Nodes: the kubelets' heartbeats and the
// host faults list them) are asked for before Start starts the factory.
// One first asked for afterwards is never started: its lister stays
// empty, and then no host renews its Lease and every host turns Ready
// Unknown.
func TestReadInformersStarted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := newSim(ctx, &rest.Config{Host: "https://127.0.0.1:1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel() // nothing is listed: only which informers start counts
	s.kubeInformers.Start(ctx.Done())
	started := s.kubeInformers.WaitForCacheSync(ctx.Done())
	for _, obj := range []any{&corev1.Node{}, &corev1.Pod{}, &corev1.Secret{}} {
		if _, ok := started[reflect.TypeOf(obj)]; !ok {
			t.Errorf("no %T informer started with the factory; started: %v", obj, started)
		}
	}
}
