package bootstrap

import (
	"bytes"
	"fmt"

	"github.com/harvester-kit/harvester-machine/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/guestconfig"
	"gopkg.in/yaml.v3"
)

// WriteFile is one cloud-init write_files entry.
type WriteFile = cloudinit.WriteFile

// SecretFile is a root-only file; content is base64 so any byte survives.
var SecretFile = cloudinit.SecretFile

// PlainFile is a world-readable configuration file.
var PlainFile = cloudinit.PlainFile

// CloudConfig is the subset of #cloud-config this tool emits.
type CloudConfig struct {
	WriteFiles []WriteFile `yaml:"write_files"`
}

// nodeCloudConfig places files: the credential 0600, configuration 0644.
func nodeCloudConfig(files []guestconfig.File) ([]byte, error) {
	var c CloudConfig
	for _, f := range files {
		if f.Secret {
			c.WriteFiles = append(c.WriteFiles, SecretFile(f.Path, f.Content))
		} else {
			c.WriteFiles = append(c.WriteFiles, PlainFile(f.Path, f.Content))
		}
	}
	return c.Marshal()
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
