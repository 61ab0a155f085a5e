package addons

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"

	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
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
	network := DefaultOptions("guest-a")
	network.CSI = false
	network.LB = LoadBalancing{
		VIPInterface: "enp2s0", TrafficPolicyLocal: true, ManagementNetwork: "default/vlan1",
		NodeIPCIDR: "10.52.0.0/16", NodeExcludeIPRanges: []string{"10.52.0.1", "10.52.1.0/24"},
	}
	noKubeVIP := DefaultOptions("guest-a")
	noKubeVIP.CSI = false
	noKubeVIP.KubeVIP = false
	older := DefaultOptions("guest-a")
	older.Versions.CloudProvider.Tag = "v0.2.4"
	older.Versions.CSIDriver.Tag = "v0.2.3"
	for name, o := range map[string]Options{
		"all.yaml":         DefaultOptions("guest-a"),
		"mirror.yaml":      mirror,
		"ccm-only.yaml":    ccmOnly,
		"csi-only.yaml":    csiOnly,
		"older-tags.yaml":  older,
		"network.yaml":     network,
		"no-kube-vip.yaml": noKubeVIP,
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
		"ServiceAccount/kube-vip", "ClusterRole/kube-vip", "ClusterRoleBinding/kube-vip", "Role/kube-vip", "RoleBinding/kube-vip", "DaemonSet/kube-vip",
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

func TestImageAtLeast(t *testing.T) {
	for _, c := range []struct {
		tag, since string
		want       bool
	}{
		{"v0.2.4", "v0.2.5", false},
		{"v0.2.5", "v0.2.5", true},
		{"v0.2.7", "v0.2.5", true},
		{"v0.10.0", "v0.2.5", true},
		{"v0.2.5-rc1", "v0.2.5", true},
		{"v0.1.9", "v0.2.5", false},
		{"main-head", "v0.2.5", true},
	} {
		if got := (Image{Tag: c.tag}).AtLeast(c.since); got != c.want {
			t.Errorf("%s at least %s = %v, want %v", c.tag, c.since, got, c.want)
		}
	}
}

// TestCCMRulesFollowTheSelectedRelease: from v0.2.5 the cloud provider keeps
// ConfigMap kube-system/harvester-nad-mapping; older releases get no
// ConfigMap access at all.
func TestCCMRulesFollowTheSelectedRelease(t *testing.T) {
	configMapVerbs := func(tag string) []string {
		for _, r := range ccmRules(Image{Tag: tag}) {
			for _, res := range r.Resources {
				if res == "configmaps" {
					return r.Verbs
				}
			}
		}
		return nil
	}
	if v := configMapVerbs("v0.2.4"); v != nil {
		t.Errorf("v0.2.4 gets configmaps %v, want none", v)
	}
	for _, tag := range []string{"v0.2.5", CloudProviderVersion, "main-head"} {
		if got := strings.Join(configMapVerbs(tag), ","); got != "get,list,watch,create,update" {
			t.Errorf("%s configmaps verbs %q", tag, got)
		}
	}
}

func TestPinnedVersions(t *testing.T) {
	v := DefaultVersions()
	got := []string{v.CloudProvider.Tag, v.CSIDriver.Tag, v.NodeDriverRegistrar.Tag, v.Provisioner.Tag, v.Attacher.Tag, v.Resizer.Tag, v.Snapshotter.Tag}
	want := []string{"v0.2.7", "v0.2.9", "v2.16.0", "v5.3.0", "v4.11.0", "v2.1.0", "v8.5.0"}
	if v.KubeVIP.Ref("") != "docker.io/rancher/mirrored-kube-vip-kube-vip-iptables:v1.2.3" {
		t.Errorf("kube-vip pinned %s", v.KubeVIP.Ref(""))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("pinned %v, want %v", got, want)
	}
}
