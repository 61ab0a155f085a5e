package credentials

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/internal/hostile"
)

// A token, namespace, CA or cluster name that breaks YAML comes back from
// the kubeconfig exactly, in every format, and the kubeconfig still has one
// cluster, one user and one context.
func TestHostileKubeconfigValuesRoundTrip(t *testing.T) {
	for _, v := range hostile.Values() {
		if v == "" {
			continue
		}
		kc, err := BuildKubeconfig(Credentials{Server: "https://10.0.0.10:6443", CAData: []byte(v), Token: v, Namespace: v, Cluster: v})
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		for _, format := range KubeconfigFormats {
			out, err := FormatKubeconfigAs(kc, format)
			if err != nil {
				t.Fatalf("%q %s: %v", v, format, err)
			}
			if format == FormatBase64 {
				if out, err = base64.StdEncoding.DecodeString(strings.TrimSpace(string(out))); err != nil || !bytes.Equal(out, kc) {
					t.Errorf("%q: base64 format does not decode to the kubeconfig", v)
				}
			}
			if format == FormatCloudInit && !bytes.Contains(out, []byte(base64.StdEncoding.EncodeToString(kc))) && !bytes.Contains(out, kc) {
				t.Errorf("%q: cloud-init format lacks the kubeconfig", v)
			}
		}
		cfg, err := clientcmd.Load(kc)
		if err != nil {
			t.Fatalf("%q: kubeconfig does not load: %v", v, err)
		}
		if len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || len(cfg.Contexts) != 1 {
			t.Fatalf("%q: %d clusters, %d users, %d contexts", v, len(cfg.Clusters), len(cfg.AuthInfos), len(cfg.Contexts))
		}
		ctx := cfg.Contexts[cfg.CurrentContext]
		if ctx == nil || ctx.Namespace != v || cfg.AuthInfos[ctx.AuthInfo].Token != v || string(cfg.Clusters[ctx.Cluster].CertificateAuthorityData) != v {
			t.Errorf("%q: values changed: context %+v", v, ctx)
		}
		if err := CheckKubeconfig(kc); err != nil {
			t.Errorf("%q: generated kubeconfig fails the check: %v", v, err)
		}
	}
}
