package credentials

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/golden"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

var testCreds = Credentials{Server: "https://10.0.0.10:6443", CAData: []byte("-----BEGIN CERTIFICATE-----\nTESTCA\n-----END CERTIFICATE-----\n"), Token: "TEST-TOKEN", Namespace: "guests", Cluster: "guest-a"}

func TestAccessObjectsGolden(t *testing.T) {
	a := Access{ClusterName: "guest-a", Namespace: "guests"}.WithDefaults()
	golden.Assert(t, "access.yaml", golden.Must(addons.EncodeYAML(BuildAccess(a).List())))
	a.CSIClusterWide = true
	golden.Assert(t, "access-cluster-wide.yaml", golden.Must(addons.EncodeYAML(BuildAccess(a).List())))
}

// TestGrantGolden: the namespace grant's rules are exactly the pinned
// releases' calls outside the VM namespace (guest/apicalls), bound to the
// guest ServiceAccount by name.
func TestGrantGolden(t *testing.T) {
	guest := BuildAccess(Access{ClusterName: "guest-a", Namespace: "guests"}.WithDefaults()).ServiceAccount
	golden.Assert(t, "grant.yaml", golden.Must(addons.EncodeYAML(BuildGrant("guests", GrantOptions{}, GrantSubjects("guests", []corev1.ServiceAccount{*guest})).List())))
}

// TestAccessBindsNothingClusterWide: by default no object of a guest
// credential is cluster-scoped, and the CSI driver's role is bound in the
// VM namespace only.
func TestAccessBindsNothingClusterWide(t *testing.T) {
	o := BuildAccess(Access{ClusterName: "guest-a", Namespace: "guests"}.WithDefaults())
	if o.ClusterRoleBinding != nil {
		t.Fatalf("cluster-wide binding by default: %+v", o.ClusterRoleBinding)
	}
	for _, obj := range o.List() {
		if m := obj.(metav1.Object); m.GetNamespace() != "guests" {
			t.Errorf("%T %s is not in the VM namespace", obj, m.GetName())
		}
	}
	if o.CSIRoleBinding.RoleRef.Name != harvester.CSIDriverRole || o.CSIRoleBinding.RoleRef.Kind != "ClusterRole" {
		t.Errorf("CSI RoleBinding refers to %+v", o.CSIRoleBinding.RoleRef)
	}
}

func TestKubeconfigFormatsGolden(t *testing.T) {
	kc := golden.Must(BuildKubeconfig(testCreds))
	for _, f := range KubeconfigFormats {
		golden.Assert(t, "kubeconfig."+f, golden.Must(FormatKubeconfigAs(kc, f)))
	}
	if _, err := FormatKubeconfigAs(kc, "json"); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("want format error, got %v", err)
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
		"missing":       {Access{}, []string{"cluster name: required", "namespace: required"}},
		"bad names":     {Access{ClusterName: "A_B", Namespace: "x.y", ServiceAccount: "Bad/SA"}, []string{"cluster name \"A_B\"", "namespace \"x.y\"", "service account \"Bad/SA\""}},
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
