package harvesterapi

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// webhookRefusal is the answer kube-apiserver relays when Harvester's
// volume validator refuses a delete (pkg/webhook/resources/
// persistentvolumeclaim/validator.go: werror.NewConflict, code 409).
func webhookRefusal(name string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
		Message: `admission webhook "validator.harvesterhci.io" denied the request: can not delete the volume ` + name + ` which is currently attached to VM: ns/m1`,
	}}
}

// uidConflict is kube-apiserver's own answer to a delete whose UID
// precondition names another object.
func uidConflict(name string) error {
	return apierrors.NewConflict(corev1.Resource("persistentvolumeclaims"), name, errPrecondition)
}

var errPrecondition = &apierrors.StatusError{ErrStatus: metav1.Status{Message: "Precondition failed: UID in precondition: u1, UID in object meta: u2"}}

// TestRemoveTellsRefusalFromReplacement: a Conflict on a delete is done
// when the precondition's object is gone (the name holds another UID), and
// tried again when an admission webhook refused it (the object is still
// there): done once the webhook lets it through, the webhook's message
// once the pace runs out.
func TestRemoveTellsRefusalFromReplacement(t *testing.T) {
	defer func(b wait.Backoff) { refusalRetry = b }(refusalRetry)
	refusalRetry = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 4}
	tests := []struct {
		name       string
		refusals   int // deletes answered with the webhook's refusal before the store's answer
		replaced   bool
		hang       bool // a try after the refusals waits until the time runs out
		wantErr    string
		wantDelete int
		wantGone   bool
	}{
		{name: "refused twice, then deleted", refusals: 2, wantDelete: 3, wantGone: true},
		{name: "replaced by another object of the name", replaced: true, wantDelete: 1},
		{name: "refused for good", refusals: 100, wantDelete: 5, wantErr: "delete volume ns/d0: admission webhook \"validator.harvesterhci.io\" denied the request: can not delete the volume d0"},
		// The time runs out during a try after a refusal: the refusal is
		// what is reported, not the bare deadline.
		{name: "refused, then the time runs out", refusals: 1, hang: true, wantDelete: 2,
			wantErr: "can not delete the volume d0 which is currently attached to VM: ns/m1 (the time ran out while trying again: context deadline exceeded)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid := "u1"
			if tt.replaced {
				uid = "u2"
			}
			kube := kubefake.NewSimpleClientset(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "d0", Namespace: "ns", UID: types.UID(uid)}})
			deletes := 0
			var hung context.Context // the try that hangs ends with it
			kube.PrependReactor("delete", "persistentvolumeclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
				deletes++
				switch {
				case tt.replaced:
					return true, nil, uidConflict("d0")
				case deletes <= tt.refusals:
					return true, nil, webhookRefusal("d0")
				case tt.hang:
					<-hung.Done()
					return true, nil, hung.Err()
				}
				return false, nil, nil
			})
			a := FromClients(restapifake.Clients{Kube: kube, Virt: virtfake.NewSimpleClientset()}, nil, nil, Options{CallTimeout: 5 * time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			hung = ctx
			if tt.hang {
				var cancelHung context.CancelFunc
				ctx, cancelHung = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancelHung()
				hung = ctx
			}

			err := a.DeletePVC(ctx, "ns", "d0", "u1")
			if tt.wantErr == "" && err != nil {
				t.Fatalf("DeletePVC: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("DeletePVC: %v, want an error containing %q", err, tt.wantErr)
			}
			if deletes != tt.wantDelete {
				t.Errorf("%d deletes, want %d", deletes, tt.wantDelete)
			}
			_, gerr := kube.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "d0", metav1.GetOptions{})
			if gone := apierrors.IsNotFound(gerr); gone != tt.wantGone {
				t.Errorf("PVC gone: %v, want %v", gone, tt.wantGone)
			}
		})
	}
}
