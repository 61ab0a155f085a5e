package addons

import (
	"bytes"
	"strings"
	"testing"

	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// golden compares got with testdata/name (rewritten with -update).
var golden = goldenfile.Assert

func TestRenderGolden(t *testing.T) {
	mirror := DefaultOptions("guest-a")
	mirror.ImageRegistry = "registry.example.com:5000/mirror"
	mirror.Versions.CloudProvider.Tag = "v0.2.99"
	mirror.HostStorageClass = "longhorn-ssd"
	ccmOnly := DefaultOptions("guest-a")
	ccmOnly.CSI = false
	csiOnly := DefaultOptions("")
	csiOnly.CCM = false
	for name, o := range map[string]Options{
		"all.yaml":      DefaultOptions("guest-a"),
		"mirror.yaml":   mirror,
		"ccm-only.yaml": ccmOnly,
		"csi-only.yaml": csiOnly,
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := Objects(o)
			if err != nil {
				t.Fatal(err)
			}
			out, err := EncodeYAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, out)
		})
	}
}

func TestRenderedContract(t *testing.T) {
	objs, err := Objects(DefaultOptions("guest-a"))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := EncodeYAML(objs)
	dec := yaml.NewDecoder(bytes.NewReader(out))
	kinds := map[string]map[string]any{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		meta := doc["metadata"].(map[string]any)
		kinds[doc["kind"].(string)+"/"+meta["name"].(string)] = doc
		labels := meta["labels"].(map[string]any)
		if labels[LabelManagedBy] != ManagedBy || labels[LabelPartOf] != PartOf {
			t.Errorf("%s/%s lacks the prune labels: %v", doc["kind"], meta["name"], labels)
		}
		if _, ok := meta["creationTimestamp"]; ok {
			t.Errorf("%s has creationTimestamp", meta["name"])
		}
	}
	for _, want := range []string{
		"CSIDriver/driver.harvesterhci.io", "StorageClass/harvester", "DaemonSet/harvester-csi-driver",
		"Deployment/harvester-csi-driver-controllers", "Deployment/harvester-cloud-provider",
		"ClusterRole/harvester-cloud-controller-manager",
	} {
		if kinds[want] == nil {
			t.Errorf("missing %s", want)
		}
	}
	sc := kinds["StorageClass/harvester"]
	if sc["allowVolumeExpansion"] != true || sc["reclaimPolicy"] != "Delete" ||
		sc["metadata"].(map[string]any)["annotations"].(map[string]any)["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("storage class: %v", sc)
	}
	s := string(out)
	for _, c := range []string{"csi-provisioner:", "csi-attacher:", "csi-resizer:", "csi-snapshotter:", "--cluster-name=guest-a", "- configmaps"} {
		if !strings.Contains(s, c) {
			t.Errorf("output lacks %q", c)
		}
	}
}

func TestValidateCollectsEveryError(t *testing.T) {
	o := DefaultOptions("Bad_Name")
	o.CCMReplicas = 0
	o.CSIReplicas = 0
	o.Namespace = "NS"
	o.CloudConfigSecret = ""
	o.ImageRegistry = "https://reg/"
	o.Versions.CSIDriver.Tag = "bad tag"
	err := o.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"cluster name", "cloud provider replicas", "CSI driver replicas", "add-on namespace", "cloud-config Secret name", "image registry", "CSI driver version"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	none := DefaultOptions("x")
	none.CCM, none.CSI = false, false
	if err := none.Validate(); err == nil || !strings.Contains(err.Error(), "no add-on") {
		t.Errorf("want no add-on error, got %v", err)
	}
	noName := DefaultOptions("")
	if err := noName.Validate(); err == nil || !strings.Contains(err.Error(), "cluster name: required") {
		t.Errorf("want cluster-name required, got %v", err)
	}
	if _, err := Objects(noName); err == nil {
		t.Error("Objects accepted invalid options")
	}
}

func TestCloudConfigSecret(t *testing.T) {
	out, err := EncodeYAML([]runtime.Object{CloudConfigSecret(DefaultOptions("g"), []byte("kc"))})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "secret.yaml", out)
}
