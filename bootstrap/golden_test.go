package bootstrap

import (
	"strings"
	"testing"

	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"

	"github.com/harvester-kit/harvester-machine/addons"
	"k8s.io/apimachinery/pkg/runtime"
)

// golden compares got with testdata/name (rewritten with -update).
var golden = goldenfile.Assert

// must unwraps a builder result; a failure panics, which fails the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var testCreds = Credentials{Server: "https://10.0.0.10:6443", CAData: []byte("-----BEGIN CERTIFICATE-----\nTESTCA\n-----END CERTIFICATE-----\n"), Token: "TEST-TOKEN", Namespace: "guests", Cluster: "guest-a"}

func TestAccessObjectsGolden(t *testing.T) {
	a := Access{ClusterName: "guest-a", Namespace: "guests"}.WithDefaults()
	o := BuildAccess(a)
	out := must(addons.EncodeYAML([]runtime.Object{o.ServiceAccount, o.RoleBinding, o.ClusterRoleBinding, o.TokenSecret}))
	golden(t, "access.yaml", out)
}

func TestKubeconfigFormatsGolden(t *testing.T) {
	kc := must(BuildKubeconfig(testCreds))
	for _, f := range KubeconfigFormats {
		golden(t, "kubeconfig."+f, must(FormatKubeconfigAs(kc, f)))
	}
	if _, err := FormatKubeconfigAs(kc, "json"); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("want format error, got %v", err)
	}
}

func TestClusterConfigGolden(t *testing.T) {
	kc := must(BuildKubeconfig(testCreds))
	o := addons.DefaultOptions("guest-a")
	o.CSI = false
	cyml, node, err := RenderRKE1(o, kc)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "rke1-cluster.yml", cyml)
	golden(t, "rke1-node-cloud-init.yaml", node)
	withCSI := addons.DefaultOptions("guest-a")
	cyml, _, err = RenderRKE1(withCSI, kc)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "rke1-cluster-csi.yml", cyml)
	for _, f := range []string{FormatConfig, FormatCloudInit} {
		golden(t, "rke2."+f, must(RenderRKE2("guest-a", kc, f)))
	}
	for _, f := range []string{FormatManifests, FormatConfig, FormatCloudInit} {
		golden(t, "k3s."+f, must(RenderK3s(addons.DefaultOptions("guest-a"), kc, f)))
	}
}

func TestClusterConfigErrors(t *testing.T) {
	kc := must(BuildKubeconfig(testCreds))
	if _, _, err := RenderRKE1(addons.DefaultOptions(""), kc); err == nil || !strings.Contains(err.Error(), "cluster-name") {
		t.Errorf("rke1 without cluster name: %v", err)
	}
	if _, _, err := RenderRKE1(addons.DefaultOptions("g"), nil); err == nil || !strings.Contains(err.Error(), "cloud-config") {
		t.Errorf("rke1 without kubeconfig: %v", err)
	}
	if _, err := RenderRKE2("", kc, FormatCloudInit); err == nil || !strings.Contains(err.Error(), "cluster-name") {
		t.Errorf("rke2 without cluster name: %v", err)
	}
	if _, err := RenderRKE2("g", nil, FormatCloudInit); err == nil {
		t.Error("rke2 cloud-init without kubeconfig accepted")
	}
	if _, err := RenderRKE2("g", kc, "xml"); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("rke2 bad format: %v", err)
	}
	if _, err := RenderK3s(addons.DefaultOptions("g"), kc, "xml"); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("k3s bad format: %v", err)
	}
}

func TestCredentialsValidate(t *testing.T) {
	err := Credentials{Server: "http://x"}.Validate()
	for _, want := range []string{"server", "token", "namespace"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	if _, err := BuildKubeconfig(Credentials{}); err == nil {
		t.Error("empty credentials accepted")
	}
}

func TestAccessValidate(t *testing.T) {
	cases := map[string]struct {
		in   Access
		want []string
	}{
		"ok":            {Access{ClusterName: "a", Namespace: "b"}, nil},
		"missing":       {Access{}, []string{"cluster-name: required", "namespace: required"}},
		"bad names":     {Access{ClusterName: "A_B", Namespace: "x.y", ServiceAccount: "Bad/SA"}, []string{"cluster-name \"A_B\"", "namespace \"x.y\"", "service-account"}},
		"sa is default": {Access{ClusterName: "c", Namespace: "n"}.WithDefaults(), nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.in.Validate()
			if len(c.want) == 0 && err != nil {
				t.Fatalf("unexpected %v", err)
			}
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("want %q in %v", w, err)
				}
			}
		})
	}
	if a := (Access{ClusterName: "c"}).WithDefaults(); a.ServiceAccount != "c" {
		t.Errorf("service account default: %q", a.ServiceAccount)
	}
}

func TestOwnership(t *testing.T) {
	l := ownLabels("c1")
	if !IsOwned(l, "c1") || IsOwned(l, "c2") || IsOwned(map[string]string{LabelCluster: "c1"}, "c1") {
		t.Error("IsOwned wrong")
	}
	if Selector("c1") != "app.kubernetes.io/managed-by=harvester-bootstrap,harvester-bootstrap.harvesterhci.io/guest-cluster=c1" {
		t.Error(Selector("c1"))
	}
}
