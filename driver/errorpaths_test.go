package driver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// newCreateDriver returns a fake driver configured to create testMachine
// from image default/ubuntu-22.04, which the fake Harvester holds.
func newCreateDriver(t *testing.T) (*Driver, fakeHarvester) {
	t.Helper()
	d, f := newFakeDriver(t, testCluster, nil, nil)
	c := plans.BaseConfig()
	c.WaitTimeoutSeconds = d.WaitTimeoutSeconds
	d.Config = c
	d.SSHKeyPath = filepath.Join(t.TempDir(), "id_rsa")
	img := &unstructured.Unstructured{}
	img.SetAPIVersion("harvesterhci.io/v1beta1")
	img.SetKind("VirtualMachineImage")
	img.SetNamespace(testNS)
	img.SetName("ubuntu-22.04")
	img.Object["status"] = map[string]any{"storageClassName": "longhorn-ubuntu", "virtualSize": int64(1 << 30),
		"conditions": []any{map[string]any{"type": "Imported", "status": "True"}}}
	if err := f.Dyn.Tracker().Add(img); err != nil {
		t.Fatal(err)
	}
	nad := &unstructured.Unstructured{}
	nad.SetAPIVersion("k8s.cni.cncf.io/v1")
	nad.SetKind("NetworkAttachmentDefinition")
	nad.SetNamespace(testNS)
	nad.SetName("vlan1")
	if err := f.Dyn.Tracker().Create(harvesterapi.GVRNetwork, nad, testNS); err != nil {
		t.Fatal(err)
	}
	return d, f
}

// reactors is a fake clientset's reactor chain.
type reactors interface {
	PrependReactor(verb, resource string, fn k8stesting.ReactionFunc)
}

// fail makes verb on resource of the clientset answer err.
func fail(c reactors, verb, resource string, err error) {
	c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
}

func internal(msg string) error { return apierrors.NewInternalError(errors.New(msg)) }

func assertGone(t *testing.T, f fakeHarvester) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.Kube.CoreV1().Secrets(testNS).Get(ctx, vmspec.UserDataSecretName(testMachine), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cloud-init Secret left behind (get: %v)", err)
	}
	if _, err := f.Virt.KubevirtV1().VirtualMachines(testNS).Get(ctx, testMachine, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("VM left behind (get: %v)", err)
	}
}

// TestCreateRollsBack: when a step after the Secret fails, what the create
// made is removed and the step's error is reported.
func TestCreateRollsBack(t *testing.T) {
	cases := []struct {
		name  string
		setup func(fakeHarvester)
		want  string
	}{
		{"VM create fails", func(f fakeHarvester) { fail(f.Virt, "create", "virtualmachines", internal("boom")) },
			"create VM " + testNS + "/" + testMachine + ": Internal error occurred: boom"},
		{"adopting the Secret fails after the VM is made", func(f fakeHarvester) { fail(f.Kube, "patch", "secrets", internal("boom")) },
			"set the owner of Secret " + testNS + "/" + vmspec.UserDataSecretName(testMachine) + ": Internal error occurred: boom"},
		{"the VM create is applied but its answer lost", func(f fakeHarvester) {
			f.Virt.PrependReactor("create", "virtualmachines", appliedButLost(f.Virt.Tracker()))
		}, "create VM " + testNS + "/" + testMachine + ": " + context.DeadlineExceeded.Error()},
		{"the Secret create is applied but its answer lost", func(f fakeHarvester) {
			f.Kube.PrependReactor("create", "secrets", appliedButLost(f.Kube.Tracker()))
		}, "create Secret " + testNS + "/" + vmspec.UserDataSecretName(testMachine) + ": " + context.DeadlineExceeded.Error()},
		// The image, read once and followed, is deleted once the VM is
		// made: the wait ends at once, naming it, instead of timing out.
		{"the image is deleted once the VM is made", func(f fakeHarvester) {
			f.Virt.PrependReactor("create", "virtualmachines", func(k8stesting.Action) (bool, runtime.Object, error) {
				return false, nil, f.Dyn.Resource(harvesterapi.GVRImage).Namespace(testNS).Delete(context.Background(), "ubuntu-22.04", metav1.DeleteOptions{})
			})
		}, "image " + testNS + "/ubuntu-22.04 does not exist: " + machine.ErrInputChanged.Error()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, f := newCreateDriver(t)
			tc.setup(f)
			err := d.Create()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "cleanup") {
				t.Errorf("cleanup reported as failed: %v", err)
			}
			assertGone(t, f)
		})
	}
}

// TestCreateNameTaken: a cloud-init Secret or VM of the machine's name made
// by someone else fails Create naming it; the other's object stays and
// nothing of this machine is left.
func TestCreateNameTaken(t *testing.T) {
	t.Run("Secret", func(t *testing.T) {
		d, f := newCreateDriver(t)
		if err := f.Kube.Tracker().Add(fakeSecret(nil)); err != nil {
			t.Fatal(err)
		}
		err := d.Create()
		if err == nil || !strings.Contains(err.Error(), "a cloud-init Secret named "+vmspec.UserDataSecretName(testMachine)+" already exists") {
			t.Fatalf("got %v", err)
		}
		if _, err := f.Kube.CoreV1().Secrets(testNS).Get(context.Background(), vmspec.UserDataSecretName(testMachine), metav1.GetOptions{}); err != nil {
			t.Errorf("the other's Secret: %v", err)
		}
		if _, err := f.Virt.KubevirtV1().VirtualMachines(testNS).Get(context.Background(), testMachine, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("VM made (get: %v)", err)
		}
	})
	t.Run("VM", func(t *testing.T) {
		d, f := newCreateDriver(t)
		if err := f.Virt.Tracker().Add(fakeVM("someone-else", "uid-other")); err != nil {
			t.Fatal(err)
		}
		err := d.Create()
		if err == nil || !strings.Contains(err.Error(), "a VM named "+testMachine+" already exists") || strings.Contains(err.Error(), "cleanup") {
			t.Fatalf("got %v", err)
		}
		if _, err := f.Virt.KubevirtV1().VirtualMachines(testNS).Get(context.Background(), testMachine, metav1.GetOptions{}); err != nil {
			t.Errorf("the other's VM: %v", err)
		}
		if _, err := f.Kube.CoreV1().Secrets(testNS).Get(context.Background(), vmspec.UserDataSecretName(testMachine), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("cloud-init Secret left behind (get: %v)", err)
		}
	})
}

// appliedButLost stores the created object and then answers as a call
// whose deadline ran out (the API server frozen, the connection cut).
func appliedButLost(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateAction)
		if err := tracker.Create(a.GetResource(), create.GetObject(), a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, nil, context.DeadlineExceeded
	}
}

// TestCreateReportsFailedRollback: when the rollback fails too, both the
// create's and the cleanup's errors are reported.
func TestCreateReportsFailedRollback(t *testing.T) {
	d, f := newCreateDriver(t)
	fail(f.Virt, "create", "virtualmachines", internal("boom"))
	fail(f.Kube, "delete", "secrets", internal("cleanup boom"))
	err := d.Create()
	if err == nil {
		t.Fatal("create succeeded")
	}
	for _, want := range []string{
		"create VM " + testNS + "/" + testMachine + ": Internal error occurred: boom",
		"cleanup after the failed create also failed: delete Secret " + testNS + "/" + vmspec.UserDataSecretName(testMachine) + ": Internal error occurred: cleanup boom",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestUnauthorizedGivesOneCredentialError: a 401, whether on the first
// call or on a later one, gives Create, PreCreateCheck and Remove the one
// kubeapi.ErrCredentialsRejected message, once.
func TestUnauthorizedGivesOneCredentialError(t *testing.T) {
	unauthorized := apierrors.NewUnauthorized("token expired")
	everywhere := func(f fakeHarvester) {
		fail(f.Kube, "*", "*", unauthorized)
		fail(f.Virt, "*", "*", unauthorized)
		fail(f.Dyn, "*", "*", unauthorized)
	}
	cases := []struct {
		name    string
		command func(*Driver) error
		setup   func(fakeHarvester)
		hasVM   bool
	}{
		{"create, first call", (*Driver).Create, everywhere, false},
		{"create, Secret create", (*Driver).Create, func(f fakeHarvester) { fail(f.Kube, "create", "secrets", unauthorized) }, false},
		{"pre-create check, first call", (*Driver).PreCreateCheck, everywhere, false},
		{"pre-create check, permission reviews", (*Driver).PreCreateCheck, func(f fakeHarvester) {
			fail(f.Kube, "create", "selfsubjectrulesreviews", unauthorized)
		}, false},
		{"remove, first call", (*Driver).Remove, everywhere, true},
		{"remove, VM delete", (*Driver).Remove, func(f fakeHarvester) { fail(f.Virt, "delete", "virtualmachines", unauthorized) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, f := newCreateDriver(t)
			if tc.hasVM {
				if err := f.Virt.Tracker().Add(fakeVM(testMachineID, "uid-1")); err != nil {
					t.Fatal(err)
				}
			}
			tc.setup(f)
			err := tc.command(d)
			if !errors.Is(err, kubeapi.ErrCredentialsRejected) {
				t.Fatalf("got %v, want kubeapi.ErrCredentialsRejected", err)
			}
			if n := strings.Count(err.Error(), kubeapi.ErrCredentialsRejected.Error()); n != 1 {
				t.Errorf("credential message %d times: %v", n, err)
			}
			if strings.Contains(err.Error(), "token expired") {
				t.Errorf("the raw 401 leaks through: %v", err)
			}
		})
	}
}

// TestRemoveCountsNotFoundAsDone: objects that vanish between the driver
// finding and deleting them (delete answers NotFound) count as removed.
func TestRemoveCountsNotFoundAsDone(t *testing.T) {
	d, f := newFakeDriver(t, testCluster,
		[]runtime.Object{fakePVC(testMachine+"-disk-0", ownedBy(testMachineID)), fakeSecret(ownedBy(testMachineID))},
		[]runtime.Object{fakeVM(testMachineID, "uid-1")})
	vanish := func(tracker k8stesting.ObjectTracker, gr schema.GroupResource) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			del := a.(k8stesting.DeleteAction)
			if err := tracker.Delete(del.GetResource(), del.GetNamespace(), del.GetName()); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("vanish %s: %v", del.GetName(), err)
			}
			return true, nil, apierrors.NewNotFound(gr, del.GetName())
		}
	}
	f.Virt.PrependReactor("delete", "virtualmachines", vanish(f.Virt.Tracker(), schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachines"}))
	f.Kube.PrependReactor("delete", "persistentvolumeclaims", vanish(f.Kube.Tracker(), schema.GroupResource{Resource: "persistentvolumeclaims"}))
	f.Kube.PrependReactor("delete", "secrets", vanish(f.Kube.Tracker(), schema.GroupResource{Resource: "secrets"}))
	if err := d.Remove(); err != nil {
		t.Fatalf("remove: %v", err)
	}
	deletes := 0
	for _, a := range append(f.Kube.Actions(), f.Virt.Actions()...) {
		if a.GetVerb() == "delete" {
			deletes++
		}
	}
	if deletes != 3 {
		t.Errorf("%d deletes, want 3 (VM, volume, Secret)", deletes)
	}
	// Straight through the layer: a delete of nothing is done, a UID
	// precondition that no longer matches is done.
	ctx := context.Background()
	if err := d.cmd.api.DeletePVC(ctx, testNS, "never-was", "uid-x"); err != nil {
		t.Errorf("delete of a missing volume: %v", err)
	}
	f.Kube.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "s", errors.New("UID precondition failed"))
	})
	if err := d.cmd.api.DeleteSecret(ctx, testNS, "s", "uid-old"); err != nil {
		t.Errorf("delete with a stale UID: %v", err)
	}
}

// TestInputsParsedOnLoad: the JSON flags are stored as the strings the user
// gave (config.json stays as it was) and parsed again once after a load.
func TestInputsParsedOnLoad(t *testing.T) {
	d := New()
	d.MachineName = "m"
	disks := `{"disks":[{"imageName":"default/ubuntu-22.04","size":40,"bootOrder":1},{"storageClassName":"sc","size":5}]}`
	if err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagDiskInfo: disks}))); err != nil {
		t.Fatal(err)
	}
	if d.cmd.parsed == nil || len(d.cmd.parsed.Disks) != 2 {
		t.Fatalf("SetConfigFromFlags did not keep the parsed disks: %+v", d.cmd.parsed)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(raw, &stored); err != nil || stored["DiskInfo"] != disks {
		t.Fatalf("stored DiskInfo %v (%v), want the flag's string", stored["DiskInfo"], err)
	}
	loaded := New()
	if err := json.Unmarshal(raw, loaded); err != nil {
		t.Fatal(err)
	}
	in, err := loaded.inputs()
	if err != nil || len(in.Disks) != 2 || in.Disks[1].StorageClassName != "sc" {
		t.Fatalf("inputs after load: %+v, %v", in, err)
	}
	if got, err := in.ImageRefs(testNS); err != nil || len(got) != 1 || got[0].String() != "default/ubuntu-22.04" {
		t.Errorf("image refs %v, %v", got, err)
	}
}

// TestUserDataMergedOncePerCommand: the user data and cloud-config file
// are parsed once, when the flags are read, and merged with the driver's
// parts once per create: validation merges them (stand-ins for the SSH key
// and cloud-provider files), the pre-create check does not, and Create
// only renders that document with the machine's key.
func TestUserDataMergedOncePerCommand(t *testing.T) {
	merge := config.MergeUserData
	t.Cleanup(func() { config.MergeUserData = merge })
	merges := 0
	config.MergeUserData = func(in cloudinit.Input, user ...cloudinit.Part) (*cloudinit.Document, error) {
		merges++
		return merge(in, user...)
	}
	d, f := newCreateDriver(t)
	api := d.cmd.api
	cloudConfig := filepath.Join(t.TempDir(), "cloud-config")
	if err := os.WriteFile(cloudConfig, []byte("#cloud-config\nruncmd: [[echo, installed]]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagVMNamespace: testNS, config.FlagClusterName: "c1",
		config.FlagUserData: "#cloud-config\npackages: [htop]\n", config.FlagCloudConfig: cloudConfig}))); err != nil {
		t.Fatal(err)
	}
	if merges != 1 {
		t.Errorf("%d merges while reading the flags, want 1", merges)
	}
	d.cmd.api = api // the fake Harvester
	f.Kube.PrependReactor("create", "selfsubjectrulesreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectRulesReview).DeepCopy()
		r.Status.ResourceRules = []authv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
		return true, r, nil
	})
	if err := f.Kube.Tracker().Add(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-ubuntu"}}); err != nil {
		t.Fatal(err)
	}
	if err := d.PreCreateCheck(); err != nil {
		t.Fatalf("pre-create check: %v", err)
	}
	var userData string
	f.Kube.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s, _ := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret)
		userData = string(s.Data["userdata"])
		return false, nil, nil
	})
	fail(f.Virt, "create", "virtualmachines", internal("boom"))
	if err := d.Create(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("create: %v", err)
	}
	if merges != 1 {
		t.Errorf("%d merges after PreCreateCheck and Create, want 1", merges)
	}
	for _, want := range []string{"htop", "echo", "installed", "qemu-guest-agent"} {
		if !strings.Contains(userData, want) {
			t.Errorf("the Secret's user data lacks %q:\n%s", want, userData)
		}
	}
}
