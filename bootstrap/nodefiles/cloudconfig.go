// Package nodefiles holds where guest nodes keep the cloud provider's files
// and renders the cloud-init write_files that put them there.
package nodefiles

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Paths inside guest nodes.
const (
	RKE1CloudConfigPath = "/etc/kubernetes/cloud-config"
	RKE2CloudConfigPath = "/var/lib/rancher/rke2/etc/config-files/cloud-provider-config"
	RKE2ConfigDropIn    = "/etc/rancher/rke2/config.yaml.d/90-harvester-cloud-provider.yaml"
	RKE2ManifestsDir    = "/var/lib/rancher/rke2/server/manifests"
	RKE2HelmConfigFile  = RKE2ManifestsDir + "/harvester-cloud-provider-config.yaml"
	K3sManifestsDir     = "/var/lib/rancher/k3s/server/manifests"
	K3sAddonsManifest   = K3sManifestsDir + "/harvester-addons.yaml"
	K3sConfigDropIn     = "/etc/rancher/k3s/config.yaml.d/90-harvester-cloud-provider.yaml"
)

// WriteFile is one cloud-init write_files entry.
type WriteFile struct {
	Path        string `yaml:"path"`
	Content     string `yaml:"content"`
	Encoding    string `yaml:"encoding,omitempty"`
	Owner       string `yaml:"owner,omitempty"`
	Permissions string `yaml:"permissions,omitempty"`
}

// SecretFile is a root-only file; content is base64 so any byte survives.
func SecretFile(path string, content []byte) WriteFile {
	return WriteFile{Path: path, Content: base64.StdEncoding.EncodeToString(content), Encoding: "b64", Owner: "root:root", Permissions: "0600"}
}

// PlainFile is a world-readable configuration file.
func PlainFile(path string, content []byte) WriteFile {
	return WriteFile{Path: path, Content: string(content), Owner: "root:root", Permissions: "0644"}
}

// CloudConfig is the subset of #cloud-config this tool emits.
type CloudConfig struct {
	WriteFiles []WriteFile `yaml:"write_files"`
}

// Marshal renders "#cloud-config" user data.
func (c CloudConfig) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("#cloud-config\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("marshal cloud-config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
