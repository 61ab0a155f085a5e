package nodefiles

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// Distribution is the Kubernetes distribution of a guest cluster.
type Distribution string

// The distributions whose nodes get the cloud provider's files.
const (
	RKE2 Distribution = "rke2"
	K3s  Distribution = "k3s"
	RKE1 Distribution = "rke1"
)

// Distributions lists the valid values, in the order help texts show them.
var Distributions = []Distribution{RKE2, K3s, RKE1}

// ParseDistribution accepts rke2, k3s or rke1.
func ParseDistribution(s string) (Distribution, error) {
	for _, d := range Distributions {
		if string(d) == s {
			return d, nil
		}
	}
	names := make([]string, len(Distributions))
	for i, d := range Distributions {
		names[i] = string(d)
	}
	return "", fmt.Errorf("%q: must be %s", s, strings.Join(names, ", "))
}

// File is one file a node gets. Secret files hold the credential.
type File struct {
	Path    string
	Content []byte
	Secret  bool
}

// RKE1Files are the files of an RKE1 node.
func RKE1Files(kubeconfig []byte) ([]File, error) {
	if len(kubeconfig) == 0 {
		return nil, ErrNoKubeconfig
	}
	return []File{{Path: RKE1CloudConfigPath, Content: kubeconfig, Secret: true}}, nil
}

// RKE2Files are the files of an RKE2 node: the kubeconfig, the drop-in and
// the HelmChartConfig with the cluster name and lb's values.
func RKE2Files(clusterName string, kubeconfig []byte, lb addons.LoadBalancing) ([]File, error) {
	if len(kubeconfig) == 0 {
		return nil, ErrNoKubeconfig
	}
	if clusterName == "" {
		return nil, fmt.Errorf("cluster name: %w", ErrNoClusterName)
	}
	cfg, err := RKE2Settings()
	if err != nil {
		return nil, fmt.Errorf("render rke2 config: %w", err)
	}
	if err := lb.Validate(); err != nil {
		return nil, err
	}
	hcc, err := HelmChartConfig(clusterName, lb)
	if err != nil {
		return nil, fmt.Errorf("render rke2 config: %w", err)
	}
	return []File{
		{Path: RKE2CloudConfigPath, Content: kubeconfig, Secret: true},
		{Path: RKE2ConfigDropIn, Content: cfg},
		{Path: RKE2HelmConfigFile, Content: hcc},
	}, nil
}

// K3sFiles are the files of a K3s node: the add-on manifest (with the
// cloud-config Secret) and the drop-in.
func K3sFiles(o addons.Options, kubeconfig []byte) ([]File, error) {
	stream, err := AddonStream(o, kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("render k3s manifests: %w", err)
	}
	cfg, err := K3sSettings()
	if err != nil {
		return nil, fmt.Errorf("render k3s config: %w", err)
	}
	return []File{
		{Path: K3sAddonsManifest, Content: stream, Secret: true},
		{Path: K3sConfigDropIn, Content: cfg},
	}, nil
}

// NodeWriteFiles returns the write_files a node of dist needs for the
// Harvester cloud provider of guest cluster clusterName, every file mode
// 0600 (the credential base64-encoded). o selects the add-ons K3s deploys
// (its load-balancing options also go into RKE2's HelmChartConfig); its
// cluster name is replaced by clusterName. Every problem is reported
// at once.
func NodeWriteFiles(dist Distribution, clusterName string, kubeconfig []byte, o addons.Options) ([]cloudinit.WriteFile, error) {
	var errs []error
	if _, err := ParseDistribution(string(dist)); err != nil {
		errs = append(errs, fmt.Errorf("distribution %w", err))
	}
	if clusterName == "" {
		errs = append(errs, fmt.Errorf("cluster name: %w", ErrNoClusterName))
	} else if msgs := validation.IsDNS1123Label(clusterName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("cluster name %q: must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 chars)", clusterName))
	}
	if len(kubeconfig) == 0 {
		errs = append(errs, ErrNoKubeconfig)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("node files: %w", err)
	}
	o.ClusterName = clusterName
	var files []File
	var err error
	switch dist {
	case RKE2:
		files, err = RKE2Files(clusterName, kubeconfig, o.LB)
	case K3s:
		files, err = K3sFiles(o, kubeconfig)
	default:
		files, err = RKE1Files(kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("node files: %w", err)
	}
	out := make([]cloudinit.WriteFile, len(files))
	for i, f := range files {
		if f.Secret {
			out[i] = cloudinit.SecretFile(f.Path, f.Content)
		} else {
			out[i] = cloudinit.PrivateFile(f.Path, f.Content)
		}
	}
	return out, nil
}
