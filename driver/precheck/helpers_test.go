package precheck

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

const (
	testMachine   = "c1-pool1-abcde"
	testNS        = "default"
	testMachineID = "mine"
)

// newFake returns machine testMachine of ID testMachineID in namespace
// testNS, and the API of a fake Harvester holding objs (kube objects,
// KubeVirt objects).
func newFake(t *testing.T, kubeObjs, virtObjs []runtime.Object) (*harvesterapi.API, drivertest.Harvester, *machine.Machine) {
	t.Helper()
	f := drivertest.NewHarvester(append(kubeObjs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}), virtObjs, nil)
	api := f.API(config.CredentialsRejected)
	c := config.Defaults()
	c.VMNamespace, c.WaitTimeoutSeconds = testNS, 5
	m := &machine.Machine{Config: c, Ownership: machine.Ownership{MachineID: testMachineID}, Held: machine.Held{}, Name: testMachine}
	return api, f, m
}

func fakeVMI(id, uid string) *kubevirtv1.VirtualMachineInstance {
	l := harvester.MachineLabels(testNS, testMachine, "c1")
	l[harvester.LabelMachineID] = id
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: testNS, UID: types.UID(uid), Labels: l},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: "10.0.0.5"}}},
	}
}

// controlledBy makes vmi the instance of the VM of that UID.
func controlledBy(vmi *kubevirtv1.VirtualMachineInstance, uid string) *kubevirtv1.VirtualMachineInstance {
	ctrl := true
	vmi.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vmi.Name, UID: types.UID(uid), Controller: &ctrl}}
	return vmi
}

func fakePVC(name string, labels map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-" + name), Labels: labels}}
}

func fakeSecret(labels map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: vmspec.UserDataSecretName(testMachine), Namespace: testNS, UID: "uid-secret", Labels: labels}}
}
