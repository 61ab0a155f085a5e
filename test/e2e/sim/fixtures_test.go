package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	imageGVR   = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "virtualmachineimages"}
	keyPairGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "keypairs"}
	settingGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
	nadGVR     = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
	vmGVR      = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmiGVR     = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
)

func TestHostsCarryTopologyLabels(t *testing.T) {
	nodes, err := kube.CoreV1().Nodes().List(testContext(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]int{}
	for _, n := range nodes.Items {
		if n.Labels["topology.kubernetes.io/region"] != "sim-region" || n.Labels["kubernetes.io/hostname"] != n.Name {
			t.Errorf("host %s labels = %v", n.Name, n.Labels)
		}
		zones[n.Labels["topology.kubernetes.io/zone"]]++
	}
	if len(nodes.Items) != 3 || len(zones) != 2 || zones["sim-zone-a"] != 2 || zones["sim-zone-b"] != 1 {
		t.Errorf("want 3 hosts over sim-zone-a (2) and sim-zone-b (1), got %d hosts, zones %v", len(nodes.Items), zones)
	}
}

func TestHarvesterFixtures(t *testing.T) {
	ctx := testContext(t)
	image, err := dyn.Resource(imageGVR).Namespace("default").Get(ctx, "ubuntu-22.04", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _, _ := unstructured.NestedString(image.Object, "status", "storageClassName"); sc != "longhorn-ubuntu-22.04" {
		t.Errorf("image storage class = %q, want longhorn-ubuntu-22.04", sc)
	}
	if !hasCondition(image, "Imported") {
		t.Errorf("image is not Imported: %v", image.Object["status"])
	}
	if _, err := kube.StorageV1().StorageClasses().Get(ctx, "longhorn-ubuntu-22.04", metav1.GetOptions{}); err != nil {
		t.Errorf("image storage class: %v", err)
	}
	sc, err := kube.StorageV1().StorageClasses().Get(ctx, "harvester-longhorn", metav1.GetOptions{})
	if err != nil || sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("default storage class harvester-longhorn: %v %v", err, sc)
	}
	if _, err := dyn.Resource(nadGVR).Namespace("default").Get(ctx, "vlan1", metav1.GetOptions{}); err != nil {
		t.Errorf("network default/vlan1: %v", err)
	}
	setting, err := dyn.Resource(settingGVR).Get(ctx, "server-version", metav1.GetOptions{})
	if err != nil || setting.Object["value"] != "v1.8.1" {
		t.Errorf("setting server-version: %v %v", err, setting)
	}
	// The VM mutator's settings, as Harvester ships them: a default, no value.
	for name, def := range map[string]string{
		"overcommit-config":                      `{"cpu":1000,"memory":150,"storage":100}`,
		"additional-guest-memory-overhead-ratio": "1.5",
	} {
		s, err := dyn.Resource(settingGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("setting %s: %v", name, err)
			continue
		}
		if s.Object["default"] != def || (s.Object["value"] != nil && s.Object["value"] != "") {
			t.Errorf("setting %s: default %v value %v, want default %s and no value", name, s.Object["default"], s.Object["value"], def)
		}
	}
	for _, role := range []string{"harvesterhci.io:cloudprovider", "harvesterhci.io:csi-driver"} {
		if _, err := kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v", role, err)
		}
	}
}

func TestKeyPairFixtureMatchesPrivateKeyFile(t *testing.T) {
	kp, err := dyn.Resource(keyPairGVR).Namespace("default").Get(testContext(t), "sim-key", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasCondition(kp, "validated") {
		t.Errorf("key pair not validated: %v", kp.Object["status"])
	}
	info, err := os.Stat(filepath.Join(simulator.Dir, "sim-key"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v, mode %v; want mode 0600", err, info)
	}
	pub, err := os.ReadFile(filepath.Join(simulator.Dir, "sim-key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(kp.Object, "spec", "publicKey"); strings.TrimSpace(got) != strings.TrimSpace(string(pub)) {
		t.Errorf("key pair public key %q does not match sim-key.pub %q", got, pub)
	}
}

func TestKubeconfigIsAdminInDefaultNamespace(t *testing.T) {
	info, err := os.Stat(simulator.Kubeconfig)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v mode %v; want 0600", err, info)
	}
	cfg, err := clientcmd.LoadFromFile(simulator.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if ns := cfg.Contexts[cfg.CurrentContext].Namespace; ns != "default" {
		t.Errorf("context namespace = %q, want default", ns)
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil || !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Errorf("server version %v %v: want a stamped v1.x version", v, err)
	}
}

func hasCondition(u *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}
