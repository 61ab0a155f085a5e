package clusterstate

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestFetchMigrations(t *testing.T) {
	mig := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
		"metadata": map[string]any{"name": "kubevirt-evacuation-abcde", "namespace": "default"}, "status": map[string]any{"phase": "Failed"}}}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, Type: "Warning", Reason: "FailedMigration",
		InvolvedObject: corev1.ObjectReference{Kind: KindMigration, Name: "kubevirt-evacuation-abcde"}}
	lists := map[schema.GroupVersionResource]string{GVRMigration: "VirtualMachineInstanceMigrationList"}

	kube := fake.NewClientset(ev)
	c := &Clients{Kube: kube, Dyn: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, mig)}
	h := Hosts{Errors: map[string]string{}}
	c.fetchMigrations(context.Background(), &h)
	if len(h.Errors) != 0 || len(h.Migrations) != 1 || h.Migrations[0].Status.Phase != "Failed" || len(h.MigrationEvents) != 1 {
		t.Fatalf("migrations %+v, events %+v, errors %v", h.Migrations, h.MigrationEvents, h.Errors)
	}
	var sel string
	for _, a := range kube.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "events" {
			sel = l.GetListRestrictions().Fields.String()
		}
	}
	if sel != "involvedObject.kind=VirtualMachineInstanceMigration" {
		t.Errorf("events listed with field selector %q", sel)
	}

	// Events forbidden: nothing is judged from half the facts.
	kube = fake.NewClientset(ev)
	kube.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, errors.New("forbidden") })
	c = &Clients{Kube: kube, Dyn: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, mig)}
	h = Hosts{Namespace: "default", Errors: map[string]string{}}
	c.fetchMigrations(context.Background(), &h)
	if h.Migrations != nil || !strings.Contains(h.Errors[KindEvent], "forbidden (failed evacuations are not judged)") {
		t.Errorf("events forbidden: migrations %v, errors %v", h.Migrations, h.Errors)
	}
}
