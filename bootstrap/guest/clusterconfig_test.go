package guest

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/golden"
)

// testKubeconfig is a generated Harvester kubeconfig.
var testKubeconfig = golden.Must(credentials.BuildKubeconfig(credentials.Credentials{Server: "https://10.0.0.10:6443", CAData: []byte("-----BEGIN CERTIFICATE-----\nTESTCA\n-----END CERTIFICATE-----\n"), Token: "TEST-TOKEN", Namespace: "guests", Cluster: "guest-a"}))

func TestClusterConfigGolden(t *testing.T) {
	kc := testKubeconfig
	o := addons.DefaultOptions("guest-a")
	o.CSI = false
	cyml, node, err := RenderRKE1(o, kc)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "rke1-cluster.yml", cyml)
	golden.Assert(t, "rke1-node-cloud-init.yaml", node)
	withCSI := addons.DefaultOptions("guest-a")
	cyml, _, err = RenderRKE1(withCSI, kc)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "rke1-cluster-csi.yml", cyml)
	for _, f := range []string{FormatConfig, FormatCloudInit} {
		golden.Assert(t, "rke2."+f, golden.Must(RenderRKE2("guest-a", addons.LoadBalancing{}, kc, f)))
	}
	lb := addons.LoadBalancing{VIPInterface: "enp2s0", TrafficPolicyLocal: true, ManagementNetwork: "default/vlan1", NodeIPCIDR: "10.52.0.0/16"}
	golden.Assert(t, "rke2-lb.cloud-init", golden.Must(RenderRKE2("guest-a", lb, kc, FormatCloudInit)))
	for _, f := range []string{FormatManifests, FormatConfig, FormatCloudInit} {
		golden.Assert(t, "k3s."+f, golden.Must(RenderK3s(addons.DefaultOptions("guest-a"), kc, f)))
	}
}

func TestClusterConfigErrors(t *testing.T) {
	kc := testKubeconfig
	if _, _, err := RenderRKE1(addons.DefaultOptions(""), kc); err == nil || !strings.Contains(err.Error(), "cluster name") {
		t.Errorf("rke1 without cluster name: %v", err)
	}
	if _, _, err := RenderRKE1(addons.DefaultOptions("g"), nil); err == nil || !strings.Contains(err.Error(), "Harvester kubeconfig for the guests: empty") {
		t.Errorf("rke1 without kubeconfig: %v", err)
	}
	if _, err := RenderRKE2("", addons.LoadBalancing{}, kc, FormatCloudInit); err == nil || !strings.Contains(err.Error(), "cluster name") {
		t.Errorf("rke2 without cluster name: %v", err)
	}
	if _, err := RenderRKE2("g", addons.LoadBalancing{}, nil, FormatCloudInit); err == nil {
		t.Error("rke2 cloud-init without kubeconfig accepted")
	}
	if _, err := RenderRKE2("g", addons.LoadBalancing{}, kc, "xml"); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("rke2 bad format: %v", err)
	}
	if _, err := RenderRKE2("g", addons.LoadBalancing{ManagementNetwork: "vlan1"}, kc, FormatCloudInit); err == nil || !strings.Contains(err.Error(), `management network "vlan1"`) {
		t.Errorf("rke2 bad management network: %v", err)
	}
	if _, err := RenderRKE2("g", addons.LoadBalancing{VIPInterface: "eth1"}, nil, FormatConfig); err == nil || !strings.Contains(err.Error(), "format: config holds no load-balancing options") {
		t.Errorf("rke2 config with load-balancing options: %v", err)
	}
	if _, err := RenderK3s(addons.DefaultOptions("g"), kc, "xml"); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("k3s bad format: %v", err)
	}
}
