package nodefiles

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/hostile"
)

// hostileKubeconfig is a kubeconfig whose token and namespace are v.
func hostileKubeconfig(v string) []byte {
	b, _ := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "Config",
		"users":    []any{map[string]any{"name": "u", "user": map[string]any{"token": v}}},
		"contexts": []any{map[string]any{"name": "c", "context": map[string]any{"cluster": "h", "user": "u", "namespace": v}}}})
	return b
}

// A kubeconfig holding values that break YAML comes out of every artifact
// that carries it (RKE1 cluster.yml addons, K3s manifests, node
// write_files merged into cloud-init) byte for byte, and the artifacts
// hold exactly the objects and keys they should.
func TestHostileKubeconfigRoundTrip(t *testing.T) {
	o := addons.DefaultOptions("guest-a")
	o.CSI = true
	objs, err := addons.Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range hostile.Values() {
		kc := hostileKubeconfig(v)
		yml, err := RKE1ClusterYML(o, kc)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		var top map[string]any
		if err := yaml.Unmarshal(yml, &top); err != nil || len(top) != 2 || top["cloud_provider"] == nil {
			t.Fatalf("%q: cluster.yml keys %v (%v)", v, keysOf(top), err)
		}
		docs := decodeAll(t, []byte(top["addons"].(string)))
		if len(docs) != len(objs)+1 {
			t.Errorf("%q: %d objects in addons, want %d", v, len(docs), len(objs)+1)
		}
		if got := secretData(t, docs[0]); !bytes.Equal(got, kc) {
			t.Errorf("%q: cloud-config Secret holds %q, want %q", v, got, kc)
		}
		for _, dist := range Distributions {
			files, err := NodeWriteFiles(dist, "guest-a", kc, o)
			if err != nil {
				t.Fatalf("%q %s: %v", v, dist, err)
			}
			ud, err := cloudinit.Build(cloudinit.Input{WriteFiles: files})
			if err != nil {
				t.Fatalf("%q %s: %v", v, dist, err)
			}
			var doc struct {
				WriteFiles []cloudinit.WriteFile `yaml:"write_files"`
			}
			if err := yaml.Unmarshal(ud, &doc); err != nil || len(doc.WriteFiles) != len(files) {
				t.Fatalf("%q %s: write_files %d, want %d (%v)", v, dist, len(doc.WriteFiles), len(files), err)
			}
			for i, f := range doc.WriteFiles {
				if f != files[i] {
					t.Errorf("%q %s: write_files[%d] changed: %+v", v, dist, i, f)
				}
			}
		}
	}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func decodeAll(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("addons do not parse: %v", err)
		}
		if d != nil {
			out = append(out, d)
		}
	}
}

func secretData(t *testing.T, secret map[string]any) []byte {
	t.Helper()
	data, _ := secret["data"].(map[string]any)
	s, _ := data[addons.CloudConfigKey].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || secret["kind"] != "Secret" || len(data) != 1 {
		t.Fatalf("first object is not the cloud-config Secret with one key: %v", secret)
	}
	return b
}
