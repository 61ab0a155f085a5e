package driver

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
)

// TestCreateReadsEachObjectOnce: run as rancher-machine runs them, one
// after the other in one process, PreCreateCheck and Create read the
// image, the network and the key pair once: Create builds the machine
// from what the pre-create check read.
func TestCreateReadsEachObjectOnce(t *testing.T) {
	d, f := newCreateDriver(t)
	api := d.cmd.api
	key, pub := drivertest.WriteKey(t, t.TempDir(), "k", false)
	kp := &unstructured.Unstructured{}
	kp.SetAPIVersion("harvesterhci.io/v1beta1")
	kp.SetKind("KeyPair")
	kp.SetNamespace(testNS)
	kp.SetName("k")
	kp.Object["spec"] = map[string]any{"publicKey": pub}
	kp.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "validated", "status": "True"}}}
	if err := f.Dyn.Tracker().Create(harvesterapi.GVRKeyPair, kp, testNS); err != nil {
		t.Fatal(err)
	}
	if err := d.SetConfigFromFlags(optsWith(withValues(map[string]any{config.FlagVMNamespace: testNS, config.FlagClusterName: "c1",
		config.FlagKeyPairName: testNS + "/k", config.FlagSSHPrivateKeyPath: key}))); err != nil {
		t.Fatal(err)
	}
	d.SSHKeyPath = filepath.Join(t.TempDir(), "id")
	d.cmd.api = api // the fake Harvester
	passPreCreate(t, f)
	if err := d.PreCreateCheck(); err != nil {
		t.Fatalf("pre-create check: %v", err)
	}
	fail(f.Virt, "create", "virtualmachines", internal("boom"))
	if err := d.Create(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("create: %v, want the VM create's failure", err)
	}
	gets := map[string]int{}
	for _, a := range f.Dyn.Actions() {
		if a.GetVerb() == "get" {
			gets[a.GetResource().Resource]++
		}
	}
	for _, r := range []string{harvesterapi.GVRImage.Resource, harvesterapi.GVRNetwork.Resource, harvesterapi.GVRKeyPair.Resource} {
		if gets[r] != 1 {
			t.Errorf("%s read %d times by PreCreateCheck and Create, want once", r, gets[r])
		}
	}
}
