package machine

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// secretWatches counts the watches of Secrets the client made.
func secretWatches(kube *kubefake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "watch" && a.GetResource().Resource == "secrets" {
			n++
		}
	}
	return n
}

// TestWhileSecretNeeded: a VM instance past Scheduling within the delay
// costs no request for the Secret, and its deletion then ends nothing; an
// instance still Scheduling after the delay gets the Secret watched, and
// the Secret's deletion ends the wait with ErrSecretDeleted naming it.
func TestWhileSecretNeeded(t *testing.T) {
	const delay = 50 * time.Millisecond
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m1-cloudinit", Namespace: "default", UID: "s-1"}}
	vmi := func(phase kubevirtv1.VirtualMachineInstancePhase) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: phase}}
	}
	never := func(*kubevirtv1.VirtualMachineInstance) bool { return false }
	for _, tc := range []struct {
		name    string
		seen    kubevirtv1.VirtualMachineInstancePhase
		watched bool
	}{
		{"Scheduled in time", kubevirtv1.Scheduled, false},
		{"Running in time", kubevirtv1.Running, false},
		{"still Scheduling", kubevirtv1.Scheduling, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubefake.NewSimpleClientset(secret.DeepCopy())
			api := harvesterapi.FromClients(restapifake.Clients{Kube: kube, Virt: virtfake.NewSimpleClientset()}, nil, nil, harvesterapi.Options{CallTimeout: time.Second})
			m := &Machine{Config: config.Config{VMNamespace: "default"}, Name: "m1"}
			parent, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx, guard, stop := m.WhileSecretNeeded(parent, api, secret.Name, secret.UID, "1", delay)
			defer stop()
			guard(never)(vmi(tc.seen))
			if !tc.watched {
				time.Sleep(4 * delay)
				if n := secretWatches(kube); n != 0 {
					t.Fatalf("%d watches of the Secret, want none", n)
				}
				if err := kube.CoreV1().Secrets("default").Delete(parent, secret.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(4 * delay)
				if ctx.Err() != nil {
					t.Fatalf("wait ended (%v) by a Secret deleted after the pod mounted it", context.Cause(ctx))
				}
				return
			}
			for secretWatches(kube) == 0 {
				if parent.Err() != nil {
					t.Fatal("the Secret was never watched")
				}
				time.Sleep(delay / 5)
			}
			if err := kube.CoreV1().Secrets("default").Delete(parent, secret.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, ErrSecretDeleted) {
				t.Fatalf("wait ended with %v, want ErrSecretDeleted", cause)
			}
		})
	}
}
