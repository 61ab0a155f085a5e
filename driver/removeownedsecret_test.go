package driver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

// TestRemoveOneByOneWaitsForOwnedSecret: rm of a VM without Harvester's
// finalizer (made while its controllers were down) deletes the parts one
// by one; the cloud-init Secret the VM owns is the garbage collector's to
// delete once the VM is gone, and rm is not done before it is. (It once
// returned with the Secret still there.)
func TestRemoveOneByOneWaitsForOwnedSecret(t *testing.T) {
	secret := vmspec.UserDataSecretName(testMachine)
	for _, gc := range []bool{true, false} {
		d, f := newFakeDriver(t, testCluster,
			[]runtime.Object{fakePVC(testMachine+"-disk-0", ownedBy(testMachineID)), fakeSecret(ownedBy(testMachineID))},
			[]runtime.Object{fakeVM(testMachineID, "uid-1")})
		d.VMUID = "uid-1" // this machine made the VM and gave it the Secret
		d.WaitTimeoutSeconds = 2
		if gc {
			// The garbage collector: the VM gone, its Secret goes.
			f.Virt.PrependReactor("delete", "virtualmachines", func(k8stesting.Action) (bool, runtime.Object, error) {
				err := f.Kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("secrets"), testNS, secret)
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("collect the Secret: %v", err)
				}
				return false, nil, nil
			})
		}
		err := d.Remove()
		switch {
		case gc && err != nil:
			t.Errorf("with the garbage collector: %v", err)
		case !gc && (err == nil || !strings.Contains(err.Error(), secret)):
			t.Errorf("Secret never collected: got %v, want a timeout naming %s", err, secret)
		}
		for _, a := range f.Kube.Actions() {
			if a.GetVerb() == "delete" && a.GetResource().Resource == "secrets" {
				t.Errorf("gc %v: rm deleted the Secret the VM owns itself", gc)
			}
		}
		if _, err := f.Kube.CoreV1().Secrets(testNS).Get(context.Background(), secret, metav1.GetOptions{}); gc != apierrors.IsNotFound(err) {
			t.Errorf("gc %v: Secret lookup after rm: %v", gc, err)
		}
	}
}
