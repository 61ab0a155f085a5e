package credentials

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/internal/field"
)

// FuzzKubeconfigCheck: CheckKubeconfig accepts only kubeconfigs client-go
// can use, and never repeats their content (tokens) in its error.
func FuzzKubeconfigCheck(f *testing.F) {
	kc, err := BuildKubeconfig(Credentials{Server: "https://10.0.0.10:6443", Token: "tok-SECRET", Namespace: "default", Cluster: "g"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(kc), "hello: world\n", "apiVersion: v1\nkind: Config\n", "current-context: x\n", "clusters: 5\n", "{}", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		err := CheckKubeconfig([]byte(v))
		if err != nil {
			if strings.Contains(v, "tok-SECRET") && strings.Contains(err.Error(), "tok-SECRET") {
				t.Fatalf("the token is in the error: %v", err)
			}
			return
		}
		if _, err := clientcmd.RESTConfigFromKubeConfig([]byte(v)); err != nil {
			t.Fatalf("accepted a kubeconfig client-go cannot use: %v", err)
		}
	})
}

// FuzzAccessNames: names are accepted only when every object name derived
// from them is valid; problems name their field.
func FuzzAccessNames(f *testing.F) {
	for _, s := range [][3]string{{"guest", "default", ""}, {"g", "default", strings.Repeat("s", 250)}, {"ünï", "x.y", "Bad/SA"}, {"a", "b", "a.b-c"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, cluster, namespace, sa string) {
		a := Access{ClusterName: cluster, Namespace: namespace, ServiceAccount: sa}.WithDefaults()
		err := a.Validate()
		if err != nil {
			for _, f := range field.Fields(err) {
				if f == "" {
					t.Fatalf("problem names no field: %v", err)
				}
			}
			return
		}
		for _, n := range []string{a.ServiceAccount, a.TokenSecretName()} {
			if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
				t.Fatalf("accepted %+v but %q is invalid: %v", a, n, msgs)
			}
		}
		for _, n := range []string{a.RoleBindingName(), a.CSIRoleBindingName(), a.ClusterRoleBindingName()} {
			if msgs := path.IsValidPathSegmentName(n); len(msgs) > 0 {
				t.Fatalf("accepted %+v but %q is invalid: %v", a, n, msgs)
			}
		}
		if msgs := validation.IsValidLabelValue(a.ClusterName); len(msgs) > 0 {
			t.Fatalf("cluster name %q is no label value: %v", a.ClusterName, msgs)
		}
	})
}
