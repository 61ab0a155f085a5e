package simctl

import (
	"strings"
	"testing"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

func imageObject(ns, name string) *harvesterv1.VirtualMachineImage {
	return &harvesterv1.VirtualMachineImage{
		TypeMeta:   metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "VirtualMachineImage"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       harvesterv1.VirtualMachineImageSpec{DisplayName: name, SourceType: "download", URL: "http://images.example/" + name + ".qcow2"},
	}
}

func harvesterCond(conds []harvesterv1.Condition, t string) *harvesterv1.Condition {
	for i := range conds {
		if string(conds[i].Type) == t {
			return &conds[i]
		}
	}
	return nil
}

func TestImageImport(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createObject(t, gvrImage, imageObject(ns, "focal"))
	img := waitFor(t, gvrImage, ns, "focal", "Imported", func(i *harvesterv1.VirtualMachineImage) bool {
		c := i != nil && harvesterCond(i.Status.Conditions, "Imported") != nil
		return c && harvesterCond(i.Status.Conditions, "Imported").Status == corev1.ConditionTrue
	})
	if img.Status.Progress != 100 || img.Status.StorageClassName != "longhorn-focal" {
		t.Errorf("image status progress %d storageClassName %q", img.Status.Progress, img.Status.StorageClassName)
	}
	// The image's StorageClass is made by another handler than the one
	// that marks the import: it may come a moment later.
	var provisioner string
	err := simtest.WaitObject(testContext(t), env.dyn, storagev1.SchemeGroupVersion.WithResource("storageclasses"), "", "longhorn-focal", func(u *unstructured.Unstructured) bool {
		if u == nil {
			return false
		}
		provisioner, _, _ = unstructured.NestedString(u.Object, "provisioner")
		return provisioner == "driver.longhorn.io"
	})
	if err != nil {
		t.Errorf("storage class longhorn-focal with provisioner driver.longhorn.io (last seen %q): %v", provisioner, err)
	}

	createObjectWith(t, gvrImage, imageObject(ns, "broken"), func(m map[string]any) {
		if err := unstructured.SetNestedField(m, "fail", "metadata", "annotations", "sim.harvesterhci.io/import"); err != nil {
			t.Fatal(err)
		}
	})
	failed := waitFor(t, gvrImage, ns, "broken", "import failure", func(i *harvesterv1.VirtualMachineImage) bool {
		c := harvesterCond(ptrConds(i), "Imported")
		return c != nil && c.Status == corev1.ConditionFalse
	})
	if c := harvesterCond(failed.Status.Conditions, "Imported"); !strings.Contains(c.Message, "simulated import failure") {
		t.Errorf("failed import message %q", c.Message)
	}

	createObjectWith(t, gvrImage, imageObject(ns, "typo"), func(m map[string]any) {
		if err := unstructured.SetNestedField(m, "http://x", "spec", "urll"); err != nil {
			t.Fatal(err)
		}
	})
	bad := waitFor(t, gvrImage, ns, "typo", "InvalidSpec", func(i *harvesterv1.VirtualMachineImage) bool {
		c := harvesterCond(ptrConds(i), "Imported")
		return c != nil && c.Reason == "InvalidSpec"
	})
	if c := harvesterCond(bad.Status.Conditions, "Imported"); !strings.Contains(c.Message, `unknown field "spec.urll"`) {
		t.Errorf("invalid spec message %q", c.Message)
	}
}

func ptrConds(i *harvesterv1.VirtualMachineImage) []harvesterv1.Condition {
	if i == nil {
		return nil
	}
	return i.Status.Conditions
}

func TestKeyPairValidation(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	keyPair := func(name, key string) *harvesterv1.KeyPair {
		return &harvesterv1.KeyPair{
			TypeMeta:   metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "KeyPair"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       harvesterv1.KeyPairSpec{PublicKey: key},
		}
	}
	validated := func(name string) *harvesterv1.KeyPair {
		return waitFor(t, gvrKeyPair, ns, name, "validated", func(k *harvesterv1.KeyPair) bool {
			return k != nil && harvesterCond(k.Status.Conditions, "validated") != nil
		})
	}
	fixture := waitFor(t, gvrKeyPair, "default", "sim-key", "validated", func(k *harvesterv1.KeyPair) bool {
		return k != nil && harvesterCond(k.Status.Conditions, "validated") != nil
	})
	createObject(t, gvrKeyPair, keyPair("good", fixture.Spec.PublicKey))

	good := validated("good")
	if c := harvesterCond(good.Status.Conditions, "validated"); c.Status != corev1.ConditionTrue || strings.Count(good.Status.FingerPrint, ":") != 15 {
		t.Errorf("good key: condition %+v fingerprint %q", c, good.Status.FingerPrint)
	}
	if good.Status.FingerPrint != fixture.Status.FingerPrint {
		t.Errorf("same key, fingerprints %q and %q differ", good.Status.FingerPrint, fixture.Status.FingerPrint)
	}
	// A key that does not parse never gets stored: Harvester's keypair
	// validator (pkg/webhook/resources/keypair/validator.go checkPublicKey)
	// refuses it with its message.
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(keyPair("bad", "ssh-rsa not-base64!"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.dyn.Resource(gvrKeyPair).Namespace(ns).Create(testContext(t), &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "key is not in valid OpenSSH public key format") {
		t.Errorf("create a key pair whose key does not parse: %v, want Harvester's refusal", err)
	}
}
