package bootstrap

import (
	"errors"
	"fmt"

	"github.com/harvester-kit/harvester-machine/addons"
	"github.com/harvester-kit/harvester-machine/internal/guestconfig"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"
)

var marshalYAML = yamlutil.Marshal

// Formats of `addon rke2` and `addon k3s`.
const (
	FormatConfig    = "config"
	FormatManifests = "manifests"
)

// Node paths, rendered by internal/guestconfig (shared with the node driver).
const (
	RKE2ConfigDropIn   = guestconfig.RKE2ConfigDropIn
	RKE2ManifestsDir   = guestconfig.RKE2ManifestsDir
	K3sConfigDropIn    = guestconfig.K3sConfigDropIn
	K3sAddonsManifest  = guestconfig.K3sAddonsManifest
	RKE2HelmConfigFile = guestconfig.RKE2HelmConfigFile
)

// flagErr names this tool's flags in guestconfig's problems.
func flagErr(err error) error {
	switch {
	case errors.Is(err, guestconfig.ErrNoKubeconfig):
		return fmt.Errorf("%s: %w", FlagCloudConfig, err)
	case errors.Is(err, guestconfig.ErrNoClusterName):
		return fmt.Errorf("%s: %w", FlagClusterName, guestconfig.ErrNoClusterName)
	}
	return err
}

// RenderRKE1 returns the cluster.yml fragment (external cloud provider and
// an addons block with the cloud-config Secret, CCM and, when enabled, CSI)
// and the node cloud-init that writes the kubeconfig to
// /etc/kubernetes/cloud-config. Both hold the credential.
func RenderRKE1(o addons.Options, kubeconfig []byte) (clusterYML, nodeCloudInit []byte, err error) {
	if clusterYML, err = guestconfig.RKE1ClusterYML(o, kubeconfig); err != nil {
		return nil, nil, flagErr(err)
	}
	files, err := guestconfig.RKE1Files(kubeconfig)
	if err != nil {
		return nil, nil, flagErr(err)
	}
	nodeCloudInit, err = nodeCloudConfig(files)
	return clusterYML, nodeCloudInit, err
}

// RenderRKE2 renders the RKE2 settings. FormatConfig: config.yaml lines
// only (no credential). FormatCloudInit: write_files with the kubeconfig,
// a config.yaml.d drop-in and a HelmChartConfig setting the CCM cluster name.
func RenderRKE2(clusterName string, kubeconfig []byte, format string) ([]byte, error) {
	switch format {
	case FormatConfig, "":
		cfg, err := guestconfig.RKE2Settings()
		if err != nil {
			return nil, fmt.Errorf("render rke2 config: %w", err)
		}
		return cfg, nil
	case FormatCloudInit:
		files, err := guestconfig.RKE2Files(clusterName, kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("render rke2 config: %w", flagErr(err))
		}
		return nodeCloudConfig(files)
	}
	return nil, fmt.Errorf("%s %q: must be %s or %s", FlagFormat, format, FormatConfig, FormatCloudInit)
}

// RenderK3s renders, for K3s: FormatManifests (default) the manifest file
// for its auto-deploy folder (cloud-config Secret plus add-ons);
// FormatConfig the config.yaml settings; FormatCloudInit write_files
// placing both.
func RenderK3s(o addons.Options, kubeconfig []byte, format string) ([]byte, error) {
	switch format {
	case FormatConfig:
		cfg, err := guestconfig.K3sSettings()
		if err != nil {
			return nil, fmt.Errorf("render k3s config: %w", err)
		}
		return cfg, nil
	case FormatManifests, "":
		stream, err := guestconfig.AddonStream(o, kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("render k3s manifests: %w", flagErr(err))
		}
		return stream, nil
	case FormatCloudInit:
		files, err := guestconfig.K3sFiles(o, kubeconfig)
		if err != nil {
			return nil, flagErr(err)
		}
		return nodeCloudConfig(files)
	}
	return nil, fmt.Errorf("%s %q: must be %s, %s or %s", FlagFormat, format, FormatManifests, FormatConfig, FormatCloudInit)
}
