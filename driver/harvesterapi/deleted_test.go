package harvesterapi

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// TestWaitEndsAtOnceForWhatIsGone (issue 30, 6): an object the process
// deleted and saw gone (its delete answered NotFound, or a wait saw it go)
// ends a wait for its deletion at once, without a request, also a watch
// from a later resource version (which would never see the deletion);
// creating the name again forgets it.
func TestWaitEndsAtOnceForWhatIsGone(t *testing.T) {
	kube := kubefake.NewSimpleClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "u1"}})
	a := FromClients(restapifake.Clients{Kube: kube, Virt: virtfake.NewSimpleClientset()}, nil, nil, Options{CallTimeout: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	secret := Target{Kind: KindSecret, Name: "s", UID: "u1"}

	if a.Seen().Gone(KindSecret, "ns", "s") {
		t.Fatal("an existing Secret counts as gone")
	}
	if err := a.DeleteSecret(ctx, "ns", "s", "u1"); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitRemoved(ctx, "ns", time.Second, []Target{secret}); err != nil {
		t.Fatalf("wait for the deleted Secret: %v", err)
	}
	if !a.Seen().Gone(KindSecret, "ns", "s") {
		t.Fatal("a wait that saw the Secret go did not remember it")
	}
	kube.ClearActions()
	if err := a.WaitGoneAfter(ctx, "ns", "999999", secret); err != nil {
		t.Fatalf("watch from a later resource version: %v", err)
	}
	if err := a.WaitRemoved(ctx, "ns", time.Second, []Target{secret}); err != nil {
		t.Fatal(err)
	}
	if n := len(kube.Actions()); n != 0 {
		t.Errorf("waits for a Secret known gone made %d requests: %v", n, kube.Actions())
	}

	if _, err := a.CreateSecret(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}); err != nil {
		t.Fatal(err)
	}
	if a.Seen().Gone(KindSecret, "ns", "s") {
		t.Fatal("a Secret created again still counts as gone")
	}

	if err := a.DeleteSecret(ctx, "ns", "other", ""); err != nil || !a.Seen().Gone(KindSecret, "ns", "other") {
		t.Errorf("a delete answered NotFound: %v, gone %v", err, a.Seen().Gone(KindSecret, "ns", "other"))
	}
	// Something found missing that the process never asked to delete may
	// be made by others later (a VMI before its VM starts): not gone.
	if _, err := a.GetVMI(ctx, "ns", "third"); err == nil || a.Seen().Gone(KindVMI, "ns", "third") {
		t.Errorf("a Get of a VMI never deleted answered NotFound: %v, gone %v", err, a.Seen().Gone(KindVMI, "ns", "third"))
	}
	if a.Seen().Gone(KindVM, "ns", "other") {
		t.Error("a Secret's absence counted for a VM of its name")
	}
}
