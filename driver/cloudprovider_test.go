package driver

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

func TestCloudProviderValidation(t *testing.T) {
	cases := []struct {
		name   string
		values map[string]any
		want   []string // empty: valid
	}{
		{"off", nil, nil},
		{"rke2 with cluster", map[string]any{config.FlagCloudProvider: "rke2", config.FlagClusterName: "c1"}, nil},
		{"k3s with server", map[string]any{config.FlagCloudProvider: "k3s", config.FlagClusterName: "c1", config.FlagCloudProviderServer: "https://10.0.0.10:6443"}, nil},
		{"proxy with server", map[string]any{config.FlagCloudProvider: "rke1", config.FlagClusterName: "c1", config.FlagKubeconfigContent: proxyKubeconfig(), config.FlagCloudProviderServer: "https://10.0.0.10:6443"}, nil},
		{"unknown distribution", map[string]any{config.FlagCloudProvider: "eks", config.FlagClusterName: "c1"},
			[]string{`--harvester-cloud-provider: "eks" is not a distribution; valid: rke2, k3s, rke1`}},
		{"missing cluster name", map[string]any{config.FlagCloudProvider: "rke2"},
			[]string{"--harvester-cluster-name: is required with --harvester-cloud-provider"}},
		{"proxy without server", map[string]any{config.FlagCloudProvider: "rke2", config.FlagClusterName: "c1", config.FlagKubeconfigContent: proxyKubeconfig()},
			[]string{"--harvester-cloud-provider-server: is required with --harvester-cloud-provider", "https://rancher.example.com/k8s/clusters/c-m-abcd1234", "Rancher proxy URL"}},
		{"cluster name not a label", map[string]any{config.FlagCloudProvider: "rke2", config.FlagClusterName: "My_Cluster"},
			[]string{`--harvester-cluster-name: "My_Cluster" cannot name the guest credential`}},
		{"server is proxy", map[string]any{config.FlagCloudProvider: "rke2", config.FlagClusterName: "c1", config.FlagCloudProviderServer: "https://r.example.com/k8s/clusters/local"},
			[]string{"--harvester-cloud-provider-server:", "is a Rancher proxy URL"}},
		{"server not https", map[string]any{config.FlagCloudProvider: "k3s", config.FlagClusterName: "c1", config.FlagCloudProviderServer: "10.0.0.10:6443"},
			[]string{"--harvester-cloud-provider-server:", "must be an https:// URL"}},
		{"server port out of range", map[string]any{config.FlagCloudProvider: "k3s", config.FlagClusterName: "c1", config.FlagCloudProviderServer: "https://10.0.0.10:99999"},
			[]string{`--harvester-cloud-provider-server: "https://10.0.0.10:99999": port 99999 is not a port (1 to 65535)`}},
		{"server without feature", map[string]any{config.FlagCloudProviderServer: "https://10.0.0.10:6443"},
			[]string{"--harvester-cloud-provider-server: is set but --harvester-cloud-provider is not"}},
		{"hostname is the machine name", map[string]any{config.FlagCloudProvider: "rke2", config.FlagClusterName: "c1", config.FlagUserData: "#cloud-config\nhostname: c1-pool1-abcde\nfqdn: c1-pool1-abcde.example.com\n"}, nil},
		{"hostname templated", map[string]any{config.FlagCloudProvider: "rke2", config.FlagClusterName: "c1", config.FlagUserData: "## template: jinja\n#cloud-config\nhostname: \"{{ v1.local_hostname }}\"\n"}, nil},
		{"hostname without cloud provider", map[string]any{config.FlagUserData: "#cloud-config\nhostname: web1\n"}, nil},
		{"hostname differs", map[string]any{config.FlagCloudProvider: "rke2", config.FlagClusterName: "c1", config.FlagUserData: "#cloud-config\nhostname: web1\n"},
			[]string{`--harvester-user-data: sets hostname "web1", but with --harvester-cloud-provider the guest's node name must be the machine name "c1-pool1-abcde"`}},
		{"fqdn differs", map[string]any{config.FlagCloudProvider: "k3s", config.FlagClusterName: "c1", config.FlagUserData: b64("#cloud-config\nfqdn: web1.example.com\n")},
			[]string{`--harvester-user-data: sets fqdn "web1.example.com"`, "drop fqdn"}},
		{"all at once", map[string]any{config.FlagCloudProvider: "x", config.FlagKubeconfigContent: proxyKubeconfig()},
			[]string{"--harvester-cloud-provider: \"x\"", "--harvester-cluster-name: is required", "--harvester-cloud-provider-server: is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := New()
			d.MachineName = "c1-pool1-abcde"
			err := d.SetConfigFromFlags(optsWith(withValues(tc.values)))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid config rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func proxyKubeconfig() string {
	return strings.Replace(drivertest.Kubeconfig, "https://127.0.0.1:6443", "https://rancher.example.com/k8s/clusters/c-m-abcd1234", 1)
}
