package bootstrap

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"gopkg.in/yaml.v3"
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
