// Package nodefiles holds where guest nodes keep the cloud provider's files
// and renders the cloud-init write_files that put them there.
package nodefiles

import (
	"fmt"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"

	"github.com/harvester-kit/harvester-machine/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/guestconfig"
)

// Paths inside guest nodes (one place: internal/guestconfig, shared with
// the node driver).
const (
	RKE1CloudConfigPath = guestconfig.RKE1CloudConfigPath
	RKE2CloudConfigPath = guestconfig.RKE2CloudConfigPath
	RKE2ConfigDropIn    = guestconfig.RKE2ConfigDropIn
	RKE2ManifestsDir    = guestconfig.RKE2ManifestsDir
	RKE2HelmConfigFile  = guestconfig.RKE2HelmConfigFile
	K3sManifestsDir     = guestconfig.K3sManifestsDir
	K3sAddonsManifest   = guestconfig.K3sAddonsManifest
	K3sConfigDropIn     = guestconfig.K3sConfigDropIn
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

// Render places files as #cloud-config write_files: the credential 0600,
// configuration 0644.
func Render(files []guestconfig.File) ([]byte, error) {
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
	body, err := yamlutil.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("marshal cloud-config: %w", err)
	}
	return append([]byte("#cloud-config\n"), body...), nil
}
