package driver

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/removal"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

const (
	testMachine   = "c1-pool1-abcde"
	testNS        = "default"
	testMachineID = "mine"
	testCluster   = "cluster-uid-1"
	testNSUID     = "ns-uid-1"
)

// fakeHarvester is the fake Harvester behind a test's driver.
type fakeHarvester = drivertest.Harvester

func settingObject(uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("harvesterhci.io/v1beta1")
	u.SetKind("Setting")
	u.SetName(harvesterapi.ServerVerID)
	u.SetUID(types.UID(uid))
	u.Object["value"] = "v1.8.0"
	return u
}

// newFakeDriver returns a driver of machine testMachine, created (per its
// state) on the cluster testCluster with ID testMachineID, talking to fakes
// holding objs (kube objects, KubeVirt objects) and a Setting of settingUID
// ("" for none).
func newFakeDriver(t *testing.T, settingUID string, kubeObjs, virtObjs []runtime.Object) (*Driver, fakeHarvester) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, UID: testNSUID}}
	var dynObjs []runtime.Object
	if settingUID != "" {
		dynObjs = append(dynObjs, settingObject(settingUID))
	}
	f := drivertest.NewHarvester(append(kubeObjs, ns), virtObjs, dynObjs)
	d := New()
	d.MachineName, d.VMNamespace = testMachine, testNS
	d.WaitTimeoutSeconds = 5
	d.Ownership = machine.Ownership{MachineID: testMachineID, ClusterUID: testCluster, NamespaceUID: testNSUID}
	d.cmd.api = f.API(config.CredentialsRejected)
	return d, f
}

func ownedBy(id string, extra ...string) map[string]string {
	l := harvester.MachineLabels(testNS, testMachine, "c1")
	if id != "" {
		l[harvester.LabelMachineID] = id
	}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

func fakeVM(id, uid string) *kubevirtv1.VirtualMachine {
	rs := kubevirtv1.RunStrategyRerunOnFailure
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: testNS, UID: types.UID(uid), Labels: ownedBy(id)},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &rs, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{{Name: "disk-0", VolumeSource: kubevirtv1.VolumeSource{
				PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: testMachine + "-disk-0"}},
			}}}},
		}},
	}
}

func fakeVMI(id, uid string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: testNS, UID: types.UID(uid), Labels: ownedBy(id)},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: "10.0.0.5"}}},
	}
}

func fakePVC(name string, labels map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-" + name), Labels: labels}}
}

func fakeSecret(labels map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: vmspec.UserDataSecretName(testMachine), Namespace: testNS, UID: "uid-secret", Labels: labels}}
}

// assertUntouched fails unless the VM, the root disk and the Secret exist.
func assertUntouched(t *testing.T, f fakeHarvester) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.Virt.KubevirtV1().VirtualMachines(testNS).Get(ctx, testMachine, metav1.GetOptions{}); err != nil {
		t.Errorf("VM: %v", err)
	}
	if _, err := f.Kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, testMachine+"-disk-0", metav1.GetOptions{}); err != nil {
		t.Errorf("PVC: %v", err)
	}
	if _, err := f.Kube.CoreV1().Secrets(testNS).Get(ctx, vmspec.UserDataSecretName(testMachine), metav1.GetOptions{}); err != nil {
		t.Errorf("Secret: %v", err)
	}
	for _, a := range append(f.Kube.Actions(), f.Virt.Actions()...) {
		if v := a.GetVerb(); v == "delete" || v == "update" || v == "patch" {
			t.Errorf("changed something: %s %s", v, a.GetResource().Resource)
		}
	}
}

// TestRemoveLeavesOthersObjects: a VM (and its disk and Secret) of the
// machine's name that another machine made, or made by hand, or the
// machine's VM replaced by another, is not touched; the error says why and
// never contains "not found" (rancher-machine would take that as success).
func TestRemoveLeavesOthersObjects(t *testing.T) {
	cases := []struct {
		name  string
		vmID  string
		vmUID string
		state machine.Ownership
		want  string
	}{
		{"another machine's (lost create race)", "winner", "uid-w", machine.Ownership{MachineID: testMachineID}, "carries " + harvester.LabelMachineID + "=winner"},
		{"made by hand", "", "uid-h", machine.Ownership{MachineID: testMachineID}, "has no " + harvester.LabelMachineID + " label"},
		{"replaced", testMachineID, "uid-new", machine.Ownership{MachineID: testMachineID, VMUID: "uid-old"}, "its UID is uid-new but this machine created the VM with UID uid-old"},
		{"legacy state, VM without creator label", "", "uid-l", machine.Ownership{}, "lacks the labels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vm := fakeVM(tc.vmID, tc.vmUID)
			if tc.state.Legacy() {
				delete(vm.Labels, harvester.LabelCreator)
			}
			d, f := newFakeDriver(t, testCluster,
				[]runtime.Object{fakePVC(testMachine+"-disk-0", ownedBy(tc.vmID)), fakeSecret(ownedBy(tc.vmID))},
				[]runtime.Object{vm})
			tc.state.ClusterUID, tc.state.NamespaceUID = testCluster, testNSUID
			d.Ownership = tc.state
			err := d.Remove()
			if !errors.Is(err, machine.ErrNotOwned) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrNotOwned saying %q", err, tc.want)
			}
			if strings.Contains(strings.ToLower(err.Error()), "not found") {
				t.Errorf("error says 'not found', rancher-machine would report success: %v", err)
			}
			assertUntouched(t, f)
		})
	}
}

// TestEveryCommandRefusesAnotherCluster: with a credential for another
// cluster every command says so, changes nothing and never reports "not
// found".
func TestEveryCommandRefusesAnotherCluster(t *testing.T) {
	for _, settingUID := range []string{"other-cluster", ""} {
		d, f := newFakeDriver(t, settingUID,
			[]runtime.Object{fakePVC(testMachine+"-disk-0", ownedBy(testMachineID)), fakeSecret(ownedBy(testMachineID))},
			[]runtime.Object{fakeVM(testMachineID, "uid-1"), fakeVMI(testMachineID, "vmi-1")})
		commands := map[string]func() error{
			"rm": d.Remove, "stop": d.Stop, "start": d.Start, "kill": d.Kill, "restart": d.Restart,
			"status": func() error { _, err := d.GetState(); return err },
			"ip":     func() error { _, err := d.GetIP(); return err },
			"create": d.Create,
		}
		for name, run := range commands {
			err := run()
			if !errors.Is(err, machine.ErrWrongCluster) {
				t.Errorf("setting %q: %s: got %v, want ErrWrongCluster", settingUID, name, err)
				continue
			}
			if strings.Contains(strings.ToLower(err.Error()), "not found") {
				t.Errorf("%s: error says 'not found': %v", name, err)
			}
		}
		assertUntouched(t, f)
	}
}

// TestConfirmClusterByNamespace: a credential that may not read settings
// is checked against the namespace's UID; one that may read neither cannot
// act.
func TestConfirmClusterByNamespace(t *testing.T) {
	forbidSetting := func(f fakeHarvester) {
		f.Dyn.PrependReactor("get", "settings", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "harvesterhci.io", Resource: "settings"}, harvesterapi.ServerVerID, errors.New("no"))
		})
	}
	forbidNamespace := func(f fakeHarvester) {
		f.Kube.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, testNS, errors.New("no"))
		})
	}
	cases := []struct {
		name   string
		nsUID  string
		setup  []func(fakeHarvester)
		want   error
		substr string
	}{
		{"namespace matches", testNSUID, []func(fakeHarvester){forbidSetting}, nil, ""},
		{"namespace differs", "ns-uid-other", []func(fakeHarvester){forbidSetting}, machine.ErrWrongCluster, "re-created"},
		{"nothing readable", testNSUID, []func(fakeHarvester){forbidSetting, forbidNamespace}, nil, "cannot confirm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, f := newFakeDriver(t, testCluster, nil, nil)
			d.NamespaceUID = tc.nsUID
			for _, s := range tc.setup {
				s(f)
			}
			err := d.newMachine().ConfirmCluster(context.Background(), d.cmd.api)
			switch {
			case tc.want == nil && tc.substr == "" && err != nil:
				t.Errorf("got %v", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("got %v, want %v", err, tc.want)
			case tc.substr != "" && (err == nil || !strings.Contains(err.Error(), tc.substr)):
				t.Errorf("got %v, want %q", err, tc.substr)
			}
		})
	}
}

// TestRemoveFindsDisksByLabel: with the VM deleted by hand, the machine's
// root disk is found by its label; hot-plug disks and other machines'
// volumes stay.
func TestRemoveFindsDisksByLabel(t *testing.T) {
	d, _ := newFakeDriver(t, testCluster, []runtime.Object{
		fakePVC(testMachine+"-disk-0", ownedBy(testMachineID)),
		fakePVC(testMachine+"-disk-1", ownedBy(testMachineID, harvester.LabelHotplug, "true")),
		fakePVC("someone-elses", ownedBy("other")),
		fakeSecret(ownedBy(testMachineID)),
	}, nil)
	r, err := removal.Find(context.Background(), d.cmd.api, d.newMachine(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(slices.Sorted(maps.Keys(r.Claims)), ","); got != testMachine+"-disk-0" {
		t.Errorf("volumes to remove: %s", got)
	}
	if r.VM != nil || r.Secret == nil {
		t.Errorf("vm %v secret %v", r.VM, r.Secret)
	}
}

// TestRemoveKeepsForeignVolumeOfOwnVM: a volume the user attached to the
// machine's VM is not the machine's and stays.
func TestRemoveKeepsForeignVolumeOfOwnVM(t *testing.T) {
	vm := fakeVM(testMachineID, "uid-1")
	vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "users-data"
	d, _ := newFakeDriver(t, testCluster, []runtime.Object{fakePVC("users-data", nil)}, []runtime.Object{vm})
	r, err := removal.Find(context.Background(), d.cmd.api, d.newMachine(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Claims) != 0 || r.VM == nil {
		t.Errorf("claims %v vm %v", r.Claims, r.VM)
	}
}

// TestOwnedByLabelsEverything: the machine ID labels the VM, its template,
// every volume claim template and the Secret.
func TestOwnedByLabelsEverything(t *testing.T) {
	c := plans.BaseConfig()
	c.DiskInfo = `{"disks":[{"imageName":"default/ubuntu-22.04","size":40,"bootOrder":1},{"storageClassName":"sc","size":5,"hotPlugAble":true}]}`
	plan, err := plans.Of(t, c, "m-1", plans.Images)
	if err != nil {
		t.Fatal(err)
	}
	plan = plan.OwnedBy("id-1")
	vm, err := vmspec.BuildVM(plan)
	if err != nil {
		t.Fatal(err)
	}
	secret := vmspec.BuildUserDataSecret(plan, []byte("x"), nil)
	for what, l := range map[string]map[string]string{"VM": vm.Labels, "template": vm.Spec.Template.ObjectMeta.Labels, "Secret": secret.Labels} {
		if l[harvester.LabelMachineID] != "id-1" {
			t.Errorf("%s labels %v", what, l)
		}
	}
	if n := strings.Count(vm.Annotations[harvester.AnnotationVolumeClaimTemplates], `"`+harvester.LabelMachineID+`":"id-1"`); n != 2 {
		t.Errorf("%d of 2 volume claim templates carry the machine ID", n)
	}
	if !strings.Contains(vm.Annotations[harvester.AnnotationVolumeClaimTemplates], `"`+harvester.LabelHotplug+`":"true"`) {
		t.Errorf("hot-plug claim not marked")
	}
}

// TestSetConfigFromFlagsGeneratesMachineID: every configured machine gets
// its own ID, persisted with the state.
func TestSetConfigFromFlagsGeneratesMachineID(t *testing.T) {
	ids := map[string]bool{}
	for i := 0; i < 2; i++ {
		d := New()
		d.MachineName = "m"
		if err := d.SetConfigFromFlags(optsWith(validValues())); err != nil {
			t.Fatal(err)
		}
		if len(d.MachineID) != 32 || ids[d.MachineID] {
			t.Errorf("machine ID %q", d.MachineID)
		}
		ids[d.MachineID] = true
	}
}
