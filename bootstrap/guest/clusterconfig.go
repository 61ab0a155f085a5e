// Package guest renders a guest cluster's configuration for the Harvester
// cloud provider and CSI driver (RKE1 cluster.yml, RKE2 and K3s settings and
// node files) and applies the add-ons to a running guest cluster.
package guest

import (
	"fmt"

	"github.com/harvester-kit/harvester-machine/addons"
	"github.com/harvester-kit/harvester-machine/bootstrap/nodefiles"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"k8s.io/apimachinery/pkg/runtime"
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

var marshalYAML = addons.MarshalYAML

// addonStream renders the cloud-config Secret followed by the add-ons.
func addonStream(o addons.Options, kubeconfig []byte) ([]byte, error) {
	objs, err := addons.Objects(o)
	if err != nil {
		return nil, err
	}
	if len(kubeconfig) == 0 {
		return nil, field.Problem(FieldKubeconfig, "empty")
	}
	all := append([]runtime.Object{addons.CloudConfigSecret(o, kubeconfig)}, objs...)
	return addons.EncodeYAML(all)
}

// RKE1Config is the cluster.yml fragment for RKE1.
type RKE1Config struct {
	CloudProvider struct {
		Name string `yaml:"name"`
	} `yaml:"cloud_provider"`
	Addons string `yaml:"addons"`
}

// RenderRKE1 returns the cluster.yml fragment (external cloud provider and
// an addons block with the cloud-config Secret, CCM and, when enabled, CSI)
// and the node cloud-init that writes the kubeconfig to
// /etc/kubernetes/cloud-config. Both hold the credential.
func RenderRKE1(o addons.Options, kubeconfig []byte) (clusterYML, nodeCloudInit []byte, err error) {
	stream, err := addonStream(o, kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("render rke1 addons: %w", err)
	}
	var c RKE1Config
	c.CloudProvider.Name = "external"
	c.Addons = string(stream)
	clusterYML, err = marshalYAML(c)
	if err != nil {
		return nil, nil, fmt.Errorf("render rke1 addons: %w", err)
	}
	nodeCloudInit, err = nodefiles.CloudConfig{WriteFiles: []nodefiles.WriteFile{nodefiles.SecretFile(nodefiles.RKE1CloudConfigPath, kubeconfig)}}.Marshal()
	return clusterYML, nodeCloudInit, err
}

// RKE2Config holds the RKE2 config.yaml settings for the Harvester cloud provider.
type RKE2Config struct {
	CloudProviderName   string `yaml:"cloud-provider-name"`
	CloudProviderConfig string `yaml:"cloud-provider-config"`
}

// helmChartConfig passes the cluster name to RKE2's bundled CCM chart.
func helmChartConfig(clusterName string) ([]byte, error) {
	values, err := marshalYAML(map[string]any{"global": map[string]any{"cattle": map[string]any{"clusterName": clusterName}}})
	if err != nil {
		return nil, err
	}
	return marshalYAML(map[string]any{
		"apiVersion": "helm.cattle.io/v1",
		"kind":       "HelmChartConfig",
		"metadata":   map[string]any{"name": addons.CCMName, "namespace": "kube-system"},
		"spec":       map[string]any{"valuesContent": string(values)},
	})
}

// RenderRKE2 renders the RKE2 settings. FormatConfig: config.yaml lines
// only (no credential). FormatCloudInit: write_files with the kubeconfig,
// a config.yaml.d drop-in and a HelmChartConfig setting the CCM cluster name.
func RenderRKE2(clusterName string, kubeconfig []byte, format string) ([]byte, error) {
	cfg, err := marshalYAML(RKE2Config{CloudProviderName: "harvester", CloudProviderConfig: nodefiles.RKE2CloudConfigPath})
	if err != nil {
		return nil, fmt.Errorf("render rke2 config: %w", err)
	}
	switch format {
	case FormatConfig, "":
		return cfg, nil
	case FormatCloudInit:
		if len(kubeconfig) == 0 {
			return nil, fmt.Errorf("render rke2 config: %w", field.Problem(FieldKubeconfig, "empty"))
		}
		if clusterName == "" {
			return nil, fmt.Errorf("render rke2 config: %w", field.Problem(FieldClusterName, "required (names the cluster's load balancers)"))
		}
		hcc, err := helmChartConfig(clusterName)
		if err != nil {
			return nil, fmt.Errorf("render rke2 config: %w", err)
		}
		return nodefiles.CloudConfig{WriteFiles: []nodefiles.WriteFile{
			nodefiles.SecretFile(nodefiles.RKE2CloudConfigPath, kubeconfig),
			nodefiles.PlainFile(nodefiles.RKE2ConfigDropIn, cfg),
			nodefiles.PlainFile(nodefiles.RKE2HelmConfigFile, hcc),
		}}.Marshal()
	}
	return nil, field.Invalid(FieldFormat, format, "must be %s or %s", FormatConfig, FormatCloudInit)
}

// K3sConfig holds K3s server settings for an external cloud provider.
type K3sConfig struct {
	DisableCloudController bool     `yaml:"disable-cloud-controller"`
	KubeletArg             []string `yaml:"kubelet-arg"`
}

// RenderK3s renders, for K3s: FormatManifests (default) the manifest file
// for its auto-deploy folder (cloud-config Secret plus add-ons);
// FormatConfig the config.yaml settings; FormatCloudInit write_files
// placing both.
func RenderK3s(o addons.Options, kubeconfig []byte, format string) ([]byte, error) {
	cfg, err := marshalYAML(K3sConfig{DisableCloudController: true, KubeletArg: []string{"cloud-provider=external"}})
	if err != nil {
		return nil, fmt.Errorf("render k3s config: %w", err)
	}
	if format == FormatConfig {
		return cfg, nil
	}
	if format != FormatManifests && format != FormatCloudInit && format != "" {
		return nil, field.Invalid(FieldFormat, format, "must be %s, %s or %s", FormatManifests, FormatConfig, FormatCloudInit)
	}
	stream, err := addonStream(o, kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("render k3s manifests: %w", err)
	}
	if format == FormatCloudInit {
		return nodefiles.CloudConfig{WriteFiles: []nodefiles.WriteFile{
			nodefiles.SecretFile(nodefiles.K3sAddonsManifest, stream),
			nodefiles.PlainFile(nodefiles.K3sConfigDropIn, cfg),
		}}.Marshal()
	}
	return stream, nil
}
