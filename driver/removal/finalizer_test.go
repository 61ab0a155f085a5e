package removal

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// harvesterMACFinalizer is Harvester v1.8.0's VMI finalizer as its source
// makes it: wrangler's prefix "wrangler.cattle.io/" (pkg/generic/remove.go)
// and the handler name of pkg/controller/master/virtualmachine/register.go.
const harvesterMACFinalizer = "wrangler.cattle.io/VMController.BackfillObservedNetworkMacAddress"

// KubeVirt's finalizer of a VM instance (virt-controller's).
const kubevirtFinalizer = "kubevirt.io/virtualMachineControllerFinalize"

func TestFinalizerPatch(t *testing.T) {
	mac := harvesterMACFinalizer
	cases := []struct {
		name       string
		finalizers []string
		want       string // "" = nothing to do
	}{
		{"only Harvester's", []string{mac},
			`[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/0","value":"` + mac + `"},{"op":"remove","path":"/metadata/finalizers/0"}]`},
		{"after KubeVirt's", []string{kubevirtFinalizer, mac},
			`[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/1","value":"` + mac + `"},{"op":"remove","path":"/metadata/finalizers/1"}]`},
		{"before another", []string{mac, kubevirtFinalizer},
			`[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/0","value":"` + mac + `"},{"op":"remove","path":"/metadata/finalizers/0"}]`},
		{"KubeVirt's only", []string{kubevirtFinalizer}, ""},
		{"none", nil, ""},
		{"a name that only starts like it", []string{mac + "X"}, ""},
	}
	for _, c := range cases {
		patch, ok, err := finalizerPatch("u1", c.finalizers, mac)
		if err != nil || ok != (c.want != "") || string(patch) != c.want {
			t.Errorf("%s: %s, %v, %v; want %s", c.name, patch, ok, err, c.want)
		}
	}
}

// TestFinalizerPatchApplies: applied as the API server applies it, the
// patch takes exactly Harvester's finalizer from the VM instance it was
// made for, and is refused when the UID or the finalizer's place differ.
func TestFinalizerPatchApplies(t *testing.T) {
	patch, _, err := finalizerPatch("u1", []string{kubevirtFinalizer, harvesterMACFinalizer}, harvesterMACFinalizer)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	obj := func(uid string, finalizers ...string) string {
		return `{"metadata":{"uid":"` + uid + `","finalizers":["` + strings.Join(finalizers, `","`) + `"]}}`
	}
	got, err := p.Apply([]byte(obj("u1", kubevirtFinalizer, harvesterMACFinalizer)))
	if err != nil || string(got) != `{"metadata":{"finalizers":["`+kubevirtFinalizer+`"],"uid":"u1"}}` {
		t.Errorf("applied: %s, %v", got, err)
	}
	for what, o := range map[string]string{
		"another instance of the name":   obj("u2", kubevirtFinalizer, harvesterMACFinalizer),
		"the finalizer moved":            obj("u1", harvesterMACFinalizer),
		"another finalizer in its place": obj("u1", kubevirtFinalizer, "example.com/other"),
	} {
		if got, err := p.Apply([]byte(o)); err == nil {
			t.Errorf("%s: applied: %s", what, got)
		}
	}
}

var gvrVMI = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}

// apiServerPatch serves JSON patches of VM instances from the fake's
// tracker as kube-apiserver does: a failed test operation is 422 Invalid
// (apiserver's endpoints/handlers/patch.go). before, when set, runs first
// (another party changing the object meanwhile).
func apiServerPatch(t *testing.T, f *virtfake.Clientset, before func(try int)) *int {
	tries := 0
	f.PrependReactor("patch", "virtualmachineinstances", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tries++
		if before != nil {
			before(tries)
		}
		pa := a.(k8stesting.PatchAction)
		_, obj, err := k8stesting.ObjectReaction(f.Tracker())(a)
		var status apierrors.APIStatus
		if err != nil && !errors.As(err, &status) {
			err = apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		t.Logf("patch %s/%s %s: %v", pa.GetNamespace(), pa.GetName(), pa.GetPatch(), err)
		return true, obj, err
	})
	return &tries
}

func releaseFixture(t *testing.T, finalizers ...string) (*harvesterapi.API, *machine.Machine, *virtfake.Clientset, *kubevirtv1.VirtualMachineInstance) {
	t.Helper()
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: "default", UID: "u1",
		Finalizers: finalizers, DeletionTimestamp: &metav1.Time{Time: time.Now()}}}
	virt := virtfake.NewSimpleClientset(vmi.DeepCopy())
	api := harvesterapi.FromClients(restapifake.Clients{Kube: kubefake.NewSimpleClientset(), Virt: virt}, nil, nil, harvesterapi.Options{CallTimeout: 5 * time.Second})
	m := &machine.Machine{Name: testMachine, Config: config.Config{VMNamespace: "default"}}
	return api, m, virt, vmi
}

func finalizersOf(t *testing.T, virt *virtfake.Clientset) []string {
	t.Helper()
	vmi, err := virt.KubevirtV1().VirtualMachineInstances("default").Get(context.Background(), testMachine, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return vmi.Finalizers
}

// TestReleaseBackfillFinalizer: the driver takes Harvester's finalizer,
// and only it, from the instance; a list that changed meanwhile is read
// again; an instance gone or replaced is done.
func TestReleaseBackfillFinalizer(t *testing.T) {
	mac := harvesterMACFinalizer
	t.Run("released, KubeVirt's kept", func(t *testing.T) {
		api, m, virt, vmi := releaseFixture(t, kubevirtFinalizer, mac)
		tries := apiServerPatch(t, virt, nil)
		if err := releaseBackfillFinalizer(context.Background(), api, m, vmi); err != nil {
			t.Fatal(err)
		}
		if got := finalizersOf(t, virt); len(got) != 1 || got[0] != kubevirtFinalizer || *tries != 1 {
			t.Errorf("finalizers %v after %d patches, want [%s] after 1", got, *tries, kubevirtFinalizer)
		}
	})
	t.Run("list changed meanwhile", func(t *testing.T) {
		api, m, virt, vmi := releaseFixture(t, kubevirtFinalizer, mac)
		tries := apiServerPatch(t, virt, func(try int) {
			if try == 1 { // KubeVirt releases its own first
				cur, _ := virt.Tracker().Get(gvrVMI, "default", testMachine)
				v := cur.(*kubevirtv1.VirtualMachineInstance).DeepCopy()
				v.Finalizers = []string{mac}
				if err := virt.Tracker().Update(gvrVMI, v, "default"); err != nil {
					t.Fatal(err)
				}
			}
		})
		if err := releaseBackfillFinalizer(context.Background(), api, m, vmi); err != nil {
			t.Fatal(err)
		}
		if got := finalizersOf(t, virt); len(got) != 0 || *tries != 2 {
			t.Errorf("finalizers %v after %d patches, want none after 2", got, *tries)
		}
	})
	t.Run("not there", func(t *testing.T) {
		api, m, virt, vmi := releaseFixture(t, kubevirtFinalizer)
		tries := apiServerPatch(t, virt, nil)
		if err := releaseBackfillFinalizer(context.Background(), api, m, vmi); err != nil || *tries != 0 {
			t.Errorf("%v after %d patches, want nothing done", err, *tries)
		}
	})
	t.Run("gone meanwhile", func(t *testing.T) {
		api, m, virt, vmi := releaseFixture(t, mac)
		if err := virt.Tracker().Delete(gvrVMI, "default", testMachine); err != nil {
			t.Fatal(err)
		}
		apiServerPatch(t, virt, nil)
		if err := releaseBackfillFinalizer(context.Background(), api, m, vmi); err != nil {
			t.Errorf("gone: %v, want done", err)
		}
	})
	t.Run("replaced by another instance", func(t *testing.T) {
		api, m, virt, vmi := releaseFixture(t, mac)
		other := vmi.DeepCopy()
		other.UID, other.DeletionTimestamp = "u2", nil
		if err := virt.Tracker().Update(gvrVMI, other, "default"); err != nil {
			t.Fatal(err)
		}
		tries := apiServerPatch(t, virt, nil)
		if err := releaseBackfillFinalizer(context.Background(), api, m, vmi); err != nil || *tries != 1 {
			t.Errorf("%v after %d patches, want done after 1", err, *tries)
		}
		if got := finalizersOf(t, virt); len(got) != 1 || got[0] != mac {
			t.Errorf("the other instance's finalizers: %v, want them untouched", got)
		}
	})
}

// TestReleaseRefused: a credential without patch on VM instances gets an
// error naming the instance, the finalizer, why Harvester never releases
// it, and the kubectl command that does, at once.
func TestReleaseRefused(t *testing.T) {
	api, m, virt, vmi := releaseFixture(t, kubevirtFinalizer, harvesterMACFinalizer)
	virt.PrependReactor("patch", "virtualmachineinstances", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}, testMachine, errors.New(`User "system:serviceaccount:default:d" cannot patch resource "virtualmachineinstances"`))
	})
	err := releaseBackfillFinalizer(context.Background(), api, m, vmi)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want the Forbidden wrapped, got %v", err)
	}
	for _, want := range []string{
		"VM instance default/" + testMachine + " (UID u1) is held by Harvester's finalizer " + harvesterMACFinalizer,
		"onto VM default/" + testMachine + ", which was deleted, so Harvester never releases it",
		"cannot patch resource",
		"patch on virtualmachineinstances",
		`kubectl -n default patch vmi ` + testMachine + ` --type=json -p '[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/1","value":"` + harvesterMACFinalizer + `"},{"op":"remove","path":"/metadata/finalizers/1"}]'`,
		"then run rm again",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
