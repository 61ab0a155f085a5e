// Stand-in for K3s's deploy controller, K3s v1.34.4+k3s1 (RKE2 embeds
// it): which files of the manifests folder it reads and the Addon each
// becomes. It follows
// https://github.com/k3s-io/k3s/blob/v1.34.4+k3s1/pkg/deploy/controller.go.

package guests

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // objectset hash label, not a security use
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

// ManifestDirs are where K3s and RKE2 deploy manifests from.
var ManifestDirs = []string{"/var/lib/rancher/k3s/server/manifests", "/var/lib/rancher/rke2/server/manifests"}

// Addon API (k3s.cattle.io/v1), and the labels and annotations K3s's
// deploy controller (wrangler's objectset) puts on what it applies.
const (
	AddonGroup     = "k3s.cattle.io"
	AddonVersion   = "v1"
	AddonNamespace = "kube-system"

	LabelObjectSetHash  = "objectset.rio.cattle.io/hash"
	AnnOwnerGVK         = "objectset.rio.cattle.io/owner-gvk"
	AnnOwnerName        = "objectset.rio.cattle.io/owner-name"
	AnnOwnerNamespace   = "objectset.rio.cattle.io/owner-namespace"
	ownerGVK            = "k3s.cattle.io/v1, Kind=Addon"
	deployFieldManager  = "deploy@harvester-sim"
	maxObjectsInOneFile = 1000
)

// Manifest is one auto-deploy file a node writes.
type Manifest struct {
	Addon    string // Addon name: file name up to its first dot
	Path     string
	Content  []byte
	Checksum string // sha256 hex of Content
}

// Manifests picks the auto-deploy files (*.yaml, *.yml, *.json directly in
// a manifests directory) from what cloud-init writes, sorted by Addon name.
func Manifests(files []userdata.File) []Manifest {
	var out []Manifest
	for _, f := range files {
		dir, base := path.Split(path.Clean(f.Path))
		if ext := path.Ext(base); !isManifestDir(strings.TrimSuffix(dir, "/")) || ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		name, _, _ := strings.Cut(base, ".")
		if name == "" {
			continue // a dot file: K3s skips it
		}
		sum := sha256.Sum256(f.Content)
		out = append(out, Manifest{Addon: name, Path: path.Clean(f.Path), Content: f.Content, Checksum: hex.EncodeToString(sum[:])})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Addon < out[j].Addon })
	return out
}

func isManifestDir(dir string) bool {
	for _, d := range ManifestDirs {
		if dir == d {
			return true
		}
	}
	return false
}

// ParseObjects decodes a YAML (several documents) or JSON manifest into
// objects; List kinds are flattened.
func ParseObjects(content []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(content), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
			for j := range list.Items {
				out = append(out, &list.Items[j])
			}
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d: apiVersion, kind and metadata.name are required", i+1)
		}
		out = append(out, u)
		if len(out) > maxObjectsInOneFile {
			return nil, fmt.Errorf("more than %d objects", maxObjectsInOneFile)
		}
	}
	// Namespaces and CRDs first, as the deploy controller's apply orders them.
	sort.SliceStable(out, func(i, j int) bool { return applyOrder(out[i]) < applyOrder(out[j]) })
	return out, nil
}

func applyOrder(u *unstructured.Unstructured) int {
	switch u.GetKind() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	}
	return 2
}

// ObjectSetHash is the label value marking what one Addon applied.
func ObjectSetHash(addon string) string {
	sum := sha1.Sum([]byte(ownerGVK + " " + AddonNamespace + "/" + addon)) //nolint:gosec // label value
	return hex.EncodeToString(sum[:])
}

// MarkOwned sets the objectset label and owner annotations of addon on u.
func MarkOwned(u *unstructured.Unstructured, addon string) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[LabelObjectSetHash] = ObjectSetHash(addon)
	u.SetLabels(l)
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnOwnerGVK], a[AnnOwnerName], a[AnnOwnerNamespace] = ownerGVK, addon, AddonNamespace
	u.SetAnnotations(a)
}
