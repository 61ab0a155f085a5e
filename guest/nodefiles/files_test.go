package nodefiles

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://10.0.0.10:6443"}
  name: harvester
contexts:
- context: {cluster: harvester, namespace: guests, user: guest-a}
  name: guest-a
current-context: guest-a
users:
- name: guest-a
  user: {token: TEST-TOKEN}
`

func nodeFiles(t *testing.T, d Distribution) map[string][]byte {
	t.Helper()
	wf, err := NodeWriteFiles(d, "guest-a", []byte(testKubeconfig), addons.DefaultOptions("ignored"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range wf {
		if f.Permissions != "0600" || f.Owner != "root:root" {
			t.Errorf("%s: mode %s owner %s, want 0600 root:root", f.Path, f.Permissions, f.Owner)
		}
		content := []byte(f.Content)
		if f.Encoding == "b64" {
			var err error
			if content, err = base64.StdEncoding.DecodeString(f.Content); err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
		}
		if _, dup := out[f.Path]; dup {
			t.Errorf("%s written twice", f.Path)
		}
		out[f.Path] = content
	}
	return out
}

// TestNodeWriteFilesGolden pins the write_files of each distribution as
// package cloudinit marshals them.
func TestNodeWriteFilesGolden(t *testing.T) {
	for _, d := range Distributions {
		t.Run(string(d), func(t *testing.T) {
			wf, err := NodeWriteFiles(d, "guest-a", []byte(testKubeconfig), addons.DefaultOptions(""))
			if err != nil {
				t.Fatal(err)
			}
			out, err := cloudinit.Build(cloudinit.Input{WriteFiles: wf})
			if err != nil {
				t.Fatal(err)
			}
			goldenfile.Assert(t, string(d)+".yaml", out)
		})
	}
}

func TestRKE2Files(t *testing.T) {
	files := nodeFiles(t, RKE2)
	if len(files) != 3 {
		t.Errorf("want 3 files, got %d", len(files))
	}
	if string(files[RKE2CloudConfigPath]) != testKubeconfig {
		t.Errorf("kubeconfig changed on the way: %q", files[RKE2CloudConfigPath])
	}
	var dropIn map[string]any
	mustYAML(t, files[RKE2ConfigDropIn], &dropIn)
	if dropIn["cloud-provider-name"] != "harvester" || dropIn["cloud-provider-config"] != RKE2CloudConfigPath || len(dropIn) != 2 {
		t.Errorf("rke2 drop-in %v", dropIn)
	}
	var hcc struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			ValuesContent string `yaml:"valuesContent"`
		}
	}
	mustYAML(t, files[RKE2HelmConfigFile], &hcc)
	var values struct {
		Global struct {
			Cattle struct {
				ClusterName string `yaml:"clusterName"`
			}
		}
	}
	mustYAML(t, []byte(hcc.Spec.ValuesContent), &values)
	if hcc.Kind != "HelmChartConfig" || hcc.Metadata.Name != addons.CCMName || hcc.Metadata.Namespace != "kube-system" || values.Global.Cattle.ClusterName != "guest-a" {
		t.Errorf("HelmChartConfig %+v values %+v", hcc, values)
	}
}

// TestRKE2HelmChartConfigValues: RKE2's bundled chart gets the cloud
// provider's network flags and kube-vip's settings.
func TestRKE2HelmChartConfigValues(t *testing.T) {
	for name, lb := range map[string]addons.LoadBalancing{
		"rke2-hcc-default.yaml": {},
		"rke2-hcc-lb.yaml": {VIPInterface: "enp2s0", TrafficPolicyLocal: true, ManagementNetwork: "default/vlan1",
			NodeIPCIDR: "10.52.0.0/16", NodeExcludeIPRanges: []string{"10.52.0.1", "10.52.1.0/24"}},
		"rke2-hcc-interface.yaml": {VIPInterface: "eth1"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := HelmChartConfig("guest-a", lb)
			if err != nil {
				t.Fatal(err)
			}
			goldenfile.Assert(t, name, out)
		})
	}
	var hcc struct {
		Spec struct {
			ValuesContent string `yaml:"valuesContent"`
		}
	}
	out, _ := HelmChartConfig("guest-a", addons.LoadBalancing{TrafficPolicyLocal: true, ManagementNetwork: "default/vlan1"})
	mustYAML(t, out, &hcc)
	var values map[string]any
	mustYAML(t, []byte(hcc.Spec.ValuesContent), &values)
	kv := values["kube-vip"].(map[string]any)
	if a, ok := kv["affinity"]; !ok || a != nil {
		t.Errorf("kube-vip affinity %v (present %v), want null (on every node)", a, ok)
	}
	if env := kv["env"].(map[string]any); env["svc_election"] != "true" {
		t.Errorf("kube-vip env %v", env)
	}
	// The sub-chart's envValueFrom gives kube-vip its node name.
	if from, _ := kv["envValueFrom"].(map[string]any); fmt.Sprint(from) != "map[vip_nodename:map[fieldRef:map[apiVersion:v1 fieldPath:spec.nodeName]]]" {
		t.Errorf("kube-vip envValueFrom %v", from)
	}
	if args := values["extraArgs"].([]any); len(args) != 1 || args[0] != "--management-network=default/vlan1" {
		t.Errorf("extraArgs %v", args)
	}
}

func TestK3sFiles(t *testing.T) {
	files := nodeFiles(t, K3s)
	if len(files) != 2 {
		t.Errorf("want 2 files, got %d", len(files))
	}
	var dropIn map[string]any
	mustYAML(t, files[K3sConfigDropIn], &dropIn)
	args, _ := dropIn["kubelet-arg"].([]any)
	if dropIn["disable-cloud-controller"] != true || len(args) != 1 || args[0] != "cloud-provider=external" || len(dropIn) != 2 {
		t.Errorf("k3s drop-in %v", dropIn)
	}
	dec := yaml.NewDecoder(bytes.NewReader(files[K3sAddonsManifest]))
	kinds := map[string]map[string]any{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("manifest is not YAML: %v", err)
			}
			break
		}
		meta := doc["metadata"].(map[string]any)
		kinds[doc["kind"].(string)+"/"+meta["name"].(string)] = doc
	}
	secret := kinds["Secret/"+addons.DefaultCloudConfigSecret]
	if secret == nil {
		t.Fatalf("no cloud-config Secret in %v", slices.Collect(maps.Keys(kinds)))
	}
	data := secret["data"].(map[string]any)[addons.CloudConfigKey].(string)
	if kc, _ := base64.StdEncoding.DecodeString(data); string(kc) != testKubeconfig {
		t.Errorf("Secret holds %q", kc)
	}
	ccm := kinds["Deployment/"+addons.CCMName]
	if ccm == nil || !strings.Contains(fmtYAML(ccm), "--cluster-name=guest-a") {
		t.Errorf("CCM deployment without --cluster-name=guest-a: %v", ccm)
	}
	for _, want := range []string{"DaemonSet/" + addons.CSIName, "CSIDriver/" + addons.CSIDriverName, "StorageClass/" + addons.StorageClass} {
		if kinds[want] == nil {
			t.Errorf("manifest lacks %s", want)
		}
	}
}

func TestRKE1Files(t *testing.T) {
	files := nodeFiles(t, RKE1)
	if len(files) != 1 || string(files[RKE1CloudConfigPath]) != testKubeconfig {
		t.Errorf("rke1 files %v", slices.Collect(maps.Keys(files)))
	}
}

func TestNodeWriteFilesCollectsEveryProblem(t *testing.T) {
	_, err := NodeWriteFiles("rke3", "", nil, addons.DefaultOptions(""))
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{`distribution "rke3": must be rke2, k3s, rke1`, "cluster name: required", "kubeconfig for the guests is empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if !errors.Is(err, ErrNoClusterName) || !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("sentinels lost: %v", err)
	}
	if _, err := NodeWriteFiles(K3s, "Guest_A", []byte("kc"), addons.DefaultOptions("")); err == nil || !strings.Contains(err.Error(), "DNS-1123") {
		t.Errorf("bad cluster name: %v", err)
	}
	bad := addons.DefaultOptions("")
	bad.CCM, bad.CSI = false, false
	if _, err := NodeWriteFiles(K3s, "guest-a", []byte("kc"), bad); err == nil || !strings.Contains(err.Error(), "no add-on") {
		t.Errorf("k3s without add-ons: %v", err)
	}
}

func TestParseDistribution(t *testing.T) {
	for _, d := range Distributions {
		if got, err := ParseDistribution(string(d)); err != nil || got != d {
			t.Errorf("%s: %v %v", d, got, err)
		}
	}
	if _, err := ParseDistribution("RKE2"); err == nil {
		t.Error("RKE2 accepted")
	}
}

func mustYAML(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("not valid YAML: %v\n%s", err, b)
	}
}

func fmtYAML(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
