package controllers

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestControlledBy: only a controller reference of the same UID counts (a
// VMI the garbage collector orphaned has none left; a VM of the same name
// made again has another UID).
func TestControlledBy(t *testing.T) {
	ref := func(uid string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm", UID: types.UID("uid-" + uid), Controller: ptr.To(controller)}
	}
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{"controller of that UID", []metav1.OwnerReference{ref("a", true)}, true},
		{"orphaned: no reference", nil, false},
		{"owner but not controller", []metav1.OwnerReference{ref("a", false)}, false},
		{"controller of another UID", []metav1.OwnerReference{ref("b", true)}, false},
	}
	for _, c := range cases {
		u := &unstructured.Unstructured{}
		u.SetOwnerReferences(c.refs)
		if got := controlledBy(u, "uid-a"); got != c.want {
			t.Errorf("%s: controlledBy = %v, want %v", c.name, got, c.want)
		}
	}
}

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
