package simctl

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/sim/controllers"
)

// setFault adds or removes one pattern line of a fault key in the fault
// ConfigMap (shared by parallel tests, hence line-wise edits with retries).
func setFault(t *testing.T, key, pattern string, add bool) {
	t.Helper()
	ctx := context.Background()
	cms := env.kube.CoreV1().ConfigMaps(controllers.FaultsNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, controllers.FaultsConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: controllers.FaultsConfigMap, Namespace: controllers.FaultsNamespace}}
			cm.Data = map[string]string{key: pattern}
			if !add {
				return nil
			}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		var lines []string
		for _, l := range strings.Split(cm.Data[key], "\n") {
			if l = strings.TrimSpace(l); l != "" && l != pattern {
				lines = append(lines, l)
			}
		}
		if add {
			lines = append(lines, pattern)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = strings.Join(lines, "\n")
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set fault %s %q: %v", key, pattern, err)
	}
}

func TestFaultStuckScheduling(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	pattern := ns + "/stuck-*"
	setFault(t, controllers.FaultStuckScheduling, pattern, true)
	t.Cleanup(func() { setFault(t, controllers.FaultStuckScheduling, pattern, false) })

	createVM(t, ns, "stuck-1", vmOpts{})
	createVM(t, ns, "free-1", vmOpts{})
	waitVMI(t, ns, "stuck-1", "held by the fault", unschedulableWith("simulator fault stuck-scheduling"))
	waitVMI(t, ns, "free-1", "Running", running)
	waitVM(t, ns, "stuck-1", "ErrorUnschedulable", printable(kubevirtv1.VirtualMachineStatusUnschedulable))

	setFault(t, controllers.FaultStuckScheduling, pattern, false)
	waitVMI(t, ns, "stuck-1", "Running once released", running)
}

func TestFaultNoIP(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	pattern := ns + "/noip"
	setFault(t, controllers.FaultNoIP, pattern, true)
	t.Cleanup(func() { setFault(t, controllers.FaultNoIP, pattern, false) })

	createVM(t, ns, "noip", vmOpts{userData: agentCloudConfig})
	createVM(t, ns, "withip", vmOpts{userData: agentCloudConfig})
	if msg := waitEvent(t, ns, "noip", "NoGuestAddress"); !contains(msg, "no-ip") {
		t.Errorf("NoGuestAddress event says %q, want the no-ip fault", msg)
	}
	waitVMI(t, ns, "withip", "an IP", hasIP)
	if vmi := waitVMI(t, ns, "noip", "Running", running); hasIP(vmi) {
		t.Fatalf("vmi under the no-ip fault has address %s", vmi.Status.Interfaces[0].IP)
	}
	setFault(t, controllers.FaultNoIP, pattern, false)
	waitVMI(t, ns, "noip", "an IP once released", hasIP)
}
