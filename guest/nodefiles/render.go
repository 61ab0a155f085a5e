package nodefiles

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"
)

// Problems the callers report under their own flag names.
var (
	ErrNoClusterName = errors.New("required: it names the credential and the cluster's load balancers")
	ErrNoKubeconfig  = errors.New("the Harvester kubeconfig for the guests is empty")
)

// RKE2Config holds the RKE2 config.yaml settings for the Harvester cloud provider.
type RKE2Config struct {
	CloudProviderName   string `yaml:"cloud-provider-name"`
	CloudProviderConfig string `yaml:"cloud-provider-config"`
}

// K3sConfig holds K3s settings for an external cloud provider.
type K3sConfig struct {
	DisableCloudController bool     `yaml:"disable-cloud-controller"`
	KubeletArg             []string `yaml:"kubelet-arg"`
}

// RKE1Config is the cluster.yml fragment for RKE1.
type RKE1Config struct {
	CloudProvider struct {
		Name string `yaml:"name"`
	} `yaml:"cloud_provider"`
	Addons string `yaml:"addons"`
}

// RKE2Settings is the RKE2 drop-in: the Harvester cloud provider reading
// its kubeconfig from RKE2CloudConfigPath.
func RKE2Settings() ([]byte, error) {
	return yamlutil.Marshal(RKE2Config{CloudProviderName: "harvester", CloudProviderConfig: RKE2CloudConfigPath})
}

// K3sSettings is the K3s drop-in: no built-in cloud controller, kubelets
// with the external cloud provider.
func K3sSettings() ([]byte, error) {
	return yamlutil.Marshal(K3sConfig{DisableCloudController: true, KubeletArg: []string{"cloud-provider=external"}})
}

// rke2ChartValues are the values RKE2's bundled harvester-cloud-provider
// chart gets: the cluster name, the cloud provider's network flags
// (extraArgs) and the settings of its kube-vip sub-chart.
type rke2ChartValues struct {
	Global    rke2Global     `yaml:"global"`
	ExtraArgs []string       `yaml:"extraArgs,omitempty"`
	KubeVIP   *kubeVIPValues `yaml:"kube-vip,omitempty"`
}

type rke2Global struct {
	Cattle struct {
		ClusterName string `yaml:"clusterName"`
	} `yaml:"cattle"`
}

type kubeVIPValues struct {
	Env map[string]string `yaml:"env,omitempty"`
	// EnvValueFrom is the sub-chart's envValueFrom (name -> valueFrom):
	// vip_nodename from the pod's node.
	EnvValueFrom map[string]any `yaml:"envValueFrom,omitempty"`
	// Affinity null removes the chart's control-plane affinity (Helm
	// deletes a default a user value sets to null): kube-vip on every node.
	Affinity helmNull `yaml:"affinity,omitempty"`
}

// helmNull marshals as null when set (and is left out when not).
type helmNull bool

// MarshalYAML writes null.
func (helmNull) MarshalYAML() (any, error) { return nil, nil }

// HelmChartConfig passes the cluster name, the cloud provider's network
// flags and kube-vip's settings to RKE2's bundled CCM chart.
func HelmChartConfig(clusterName string, lb addons.LoadBalancing) ([]byte, error) {
	v := rke2ChartValues{ExtraArgs: lb.CCMArgs()}
	v.Global.Cattle.ClusterName = clusterName
	nodeName, err := jsonValue(addons.KubeVIPNodeNameSource())
	if err != nil {
		return nil, err
	}
	v.KubeVIP = &kubeVIPValues{Env: lb.KubeVIPEnvOverrides(), Affinity: helmNull(lb.KubeVIPOnEveryNode()),
		EnvValueFrom: map[string]any{addons.KubeVIPEnvNodeName: nodeName}}
	values, err := yamlutil.Marshal(v)
	if err != nil {
		return nil, err
	}
	return yamlutil.Marshal(map[string]any{
		"apiVersion": "helm.cattle.io/v1",
		"kind":       "HelmChartConfig",
		"metadata":   map[string]any{"name": addons.CCMName, "namespace": "kube-system"},
		"spec":       map[string]any{"valuesContent": string(values)},
	})
}

// jsonValue is v as its JSON form (API types carry JSON field names only).
func jsonValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

// AddonStream renders the cloud-config Secret holding kubeconfig followed
// by the add-ons o selects. It holds the credential.
func AddonStream(o addons.Options, kubeconfig []byte) ([]byte, error) {
	objs, err := addons.Objects(o)
	if err != nil {
		return nil, err
	}
	if len(kubeconfig) == 0 {
		return nil, ErrNoKubeconfig
	}
	all := append([]runtime.Object{addons.CloudConfigSecret(o, kubeconfig)}, objs...)
	return addons.EncodeYAML(all)
}

// RKE1ClusterYML is the cluster.yml fragment: the external cloud provider
// and an addons block with the cloud-config Secret and the add-ons. It
// holds the credential.
func RKE1ClusterYML(o addons.Options, kubeconfig []byte) ([]byte, error) {
	stream, err := AddonStream(o, kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("render rke1 addons: %w", err)
	}
	var c RKE1Config
	c.CloudProvider.Name = "external"
	c.Addons = string(stream)
	out, err := yamlutil.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("render rke1 addons: %w", err)
	}
	return out, nil
}
