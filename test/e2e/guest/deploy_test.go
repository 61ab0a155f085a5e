package guest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/harvester-kit/harvester-machine/sim/guests"
)

func gzipB64(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// rke2CloudInit writes manifest into RKE2's auto-deploy folder, gzip+base64
// encoded, and installs the guest agent.
func rke2CloudInit(t *testing.T, manifest string) []byte {
	t.Helper()
	return []byte("#cloud-config\npackages:\n  - qemu-guest-agent\nwrite_files:\n" +
		"  - path: /var/lib/rancher/rke2/server/manifests/extras.v1.yaml\n    encoding: gzip+base64\n    content: " + gzipB64(t, manifest) + "\n")
}

const twoConfigMaps = `apiVersion: v1
kind: ConfigMap
metadata: {name: keep}
data: {version: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: dropped}
`

const oneConfigMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: keep}
data: {version: "2"}
`

// TestRKE2ManifestsApplyAndPrune: a newer version of a manifest file is
// applied and what it dropped is pruned, as RKE2's deploy controller does;
// a node whose VM goes away turns NotReady.
func TestRKE2ManifestsApplyAndPrune(t *testing.T) {
	cluster := "rke2-prune"
	ctx := testContext(t)
	secrets := env.kube.CoreV1().Secrets(vmNamespace)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-cloudinit"}, Data: map[string][]byte{"userdata": rke2CloudInit(t, twoConfigMaps)}}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), secret.Name, metav1.DeleteOptions{}) })
	vms := env.dyn.Resource(gvrVM).Namespace(vmNamespace)
	for _, name := range []string{cluster + "-0", cluster + "-1"} {
		if _, err := vms.Create(ctx, guestVMWith(name, cluster, map[string]any{"secretRef": map[string]any{"name": secret.Name}}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleteVMAtEnd(t, name)
	}
	guest, guestDyn := guestClients(t, cluster)
	checkNodesJoined(t, guest, []string{cluster + "-0", cluster + "-1"})
	cms := guest.CoreV1().ConfigMaps(guests.AddonNamespace)
	// The deploy controller applies the file's objects, then records the
	// Addon (named after the file up to its first dot): wait for all three.
	var addon *unstructured.Unstructured
	poll(t, "both ConfigMaps of version 1 and Addon extras (file extras.v1.yaml up to its first dot)", func(ctx context.Context) (bool, string) {
		_, errKeep := cms.Get(ctx, "keep", metav1.GetOptions{})
		_, errDropped := cms.Get(ctx, "dropped", metav1.GetOptions{})
		var errAddon error
		addon, errAddon = guestDyn.Resource(guests.AddonGVR).Namespace(guests.AddonNamespace).Get(ctx, "extras", metav1.GetOptions{})
		return errKeep == nil && errDropped == nil && errAddon == nil,
			"keep: " + errString(errKeep) + ", dropped: " + errString(errDropped) + ", addon: " + errString(errAddon)
	})
	first, _, _ := unstructured.NestedString(addon.Object, "spec", "checksum")

	secret.Data["userdata"] = rke2CloudInit(t, oneConfigMap)
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "version 2 applied and the dropped ConfigMap pruned", func(ctx context.Context) (bool, string) {
		keep, err := cms.Get(ctx, "keep", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, errDropped := cms.Get(ctx, "dropped", metav1.GetOptions{})
		a, errAddon := guestDyn.Resource(guests.AddonGVR).Namespace(guests.AddonNamespace).Get(ctx, "extras", metav1.GetOptions{})
		sum := ""
		if errAddon == nil {
			addon = a
			sum, _, _ = unstructured.NestedString(a.Object, "spec", "checksum")
		}
		return keep.Data["version"] == "2" && apierrors.IsNotFound(errDropped) && sum != first,
			"keep version " + keep.Data["version"] + ", dropped: " + errString(errDropped) + ", addon checksum " + sum + " (was " + first + ")"
	})
	if second, _, _ := unstructured.NestedString(addon.Object, "spec", "checksum"); second == first || second == "" {
		t.Fatalf("Addon checksum %q not updated from %q", second, first)
	}

	if err := vms.Delete(ctx, cluster+"-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the deleted VM's node NotReady", func(ctx context.Context) (bool, string) {
		n, err := guest.CoreV1().Nodes().Get(ctx, cluster+"-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !nodeReady(n), "still Ready"
	})
}

func errString(err error) string {
	if err == nil {
		return "present"
	}
	return err.Error()
}
