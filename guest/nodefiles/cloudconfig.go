package nodefiles

import (
	"fmt"

	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"
)

// CloudConfig is the subset of #cloud-config this tool emits.
type CloudConfig struct {
	WriteFiles []cloudinit.WriteFile `yaml:"write_files"`
}

// Render places files as #cloud-config write_files: the credential 0600,
// configuration 0644.
func Render(files []File) ([]byte, error) {
	var c CloudConfig
	for _, f := range files {
		if f.Secret {
			c.WriteFiles = append(c.WriteFiles, cloudinit.SecretFile(f.Path, f.Content))
		} else {
			c.WriteFiles = append(c.WriteFiles, cloudinit.PlainFile(f.Path, f.Content))
		}
	}
	return c.Marshal()
}

// Marshal renders "#cloud-config" user data.
func (c CloudConfig) Marshal() ([]byte, error) {
	body, err := yamlutil.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("marshal cloud-config: %w", err)
	}
	return append([]byte("#cloud-config\n"), body...), nil
}
