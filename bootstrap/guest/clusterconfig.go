// Package guest renders a guest cluster's configuration for the Harvester
// cloud provider and CSI driver (RKE1 cluster.yml, RKE2 and K3s settings and
// node files) and applies the add-ons to a running guest cluster. The
// rendering itself is guest/nodefiles's, shared with the node driver.
package guest

import (
	"errors"
	"fmt"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
	"github.com/harvester-kit/harvester-machine/internal/field"
)

// Output formats of RenderRKE2 and RenderK3s.
const (
	FormatConfig    = "config"
	FormatManifests = "manifests"
	FormatCloudInit = "cloud-init"
)

// Input fields, as problems name them (a CLI renames them to its flags).
const (
	FieldClusterName = "cluster name"
	FieldFormat      = "format"
	FieldKubeconfig  = "Harvester kubeconfig for the guests"
)

// fieldErr names the input field in nodefiles' problems.
func fieldErr(err error) error {
	switch {
	case errors.Is(err, nodefiles.ErrNoKubeconfig):
		return field.Problem(FieldKubeconfig, "empty")
	case errors.Is(err, nodefiles.ErrNoClusterName):
		return field.Problem(FieldClusterName, "required (names the cluster's load balancers)")
	}
	return err
}

// RenderRKE1 returns the cluster.yml fragment (external cloud provider and
// the add-ons with the cloud-config Secret as an `addons:` manifest string)
// and the node cloud-init that writes the kubeconfig to
// /etc/kubernetes/cloud-config. Both hold the credential.
func RenderRKE1(o addons.Options, kubeconfig []byte) (clusterYML, nodeCloudInit []byte, err error) {
	if clusterYML, err = nodefiles.RKE1ClusterYML(o, kubeconfig); err != nil {
		return nil, nil, fmt.Errorf("render rke1 addons: %w", fieldErr(err))
	}
	files, err := nodefiles.RKE1Files(kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("render rke1 addons: %w", fieldErr(err))
	}
	nodeCloudInit, err = nodefiles.Render(files)
	return clusterYML, nodeCloudInit, err
}

// RenderRKE2 renders, for RKE2: FormatConfig the config.yaml settings
// only (no credential). FormatCloudInit: write_files with the kubeconfig,
// a config.yaml.d drop-in and a HelmChartConfig setting the CCM cluster
// name and lb's values (the CCM's network flags, kube-vip's settings).
func RenderRKE2(clusterName string, lb addons.LoadBalancing, kubeconfig []byte, format string) ([]byte, error) {
	switch format {
	case FormatConfig, "":
		if !lb.IsZero() {
			return nil, field.Problem(FieldFormat, "%s holds no load-balancing options (they go into the HelmChartConfig): use %s", FormatConfig, FormatCloudInit)
		}
		cfg, err := nodefiles.RKE2Settings()
		if err != nil {
			return nil, fmt.Errorf("render rke2 config: %w", err)
		}
		return cfg, nil
	case FormatCloudInit:
		files, err := nodefiles.RKE2Files(clusterName, kubeconfig, lb)
		if err != nil {
			return nil, fmt.Errorf("render rke2 config: %w", fieldErr(err))
		}
		return nodefiles.Render(files)
	}
	return nil, field.Invalid(FieldFormat, format, "must be %s or %s", FormatConfig, FormatCloudInit)
}

// RenderK3s renders, for K3s: FormatManifests (default) the manifest file
// for its auto-deploy folder (cloud-config Secret plus add-ons);
// FormatConfig the config.yaml settings; FormatCloudInit write_files
// placing both.
func RenderK3s(o addons.Options, kubeconfig []byte, format string) ([]byte, error) {
	switch format {
	case FormatConfig:
		cfg, err := nodefiles.K3sSettings()
		if err != nil {
			return nil, fmt.Errorf("render k3s config: %w", err)
		}
		return cfg, nil
	case FormatManifests, "":
		stream, err := nodefiles.AddonStream(o, kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("render k3s manifests: %w", fieldErr(err))
		}
		return stream, nil
	case FormatCloudInit:
		files, err := nodefiles.K3sFiles(o, kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("render k3s manifests: %w", fieldErr(err))
		}
		return nodefiles.Render(files)
	}
	return nil, field.Invalid(FieldFormat, format, "must be %s, %s or %s", FormatManifests, FormatConfig, FormatCloudInit)
}
