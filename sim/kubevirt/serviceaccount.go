package kubevirt

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/harvester-kit/harvester-machine/sim/podenv"
	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// tokenLifetime is how long a component's token is valid. On Harvester
// the kubelet refreshes a Pod's projected token; nothing does here, so it
// outlasts any simulator run.
const tokenLifetime = 7 * 24 * time.Hour

// serviceAccountDir is where a component's Pod files are: the simulator
// binds it at podenv.ServiceAccountDir in the component's mount namespace.
func (c *ControlPlane) serviceAccountDir(sa string) string { return c.path("serviceaccounts", sa) }

func (c *ControlPlane) kubeconfigPath(sa string) string { return c.path(sa + ".kubeconfig") }

// writeServiceAccount asks for a token of ServiceAccount sa and writes
// the Pod's files (token, ca.crt, namespace) and a kubeconfig with it.
func (c *ControlPlane) writeServiceAccount(ctx context.Context, sa string) error {
	seconds := int64(tokenLifetime / time.Second)
	tr, err := c.kube.CoreV1().ServiceAccounts(c.o.Namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kubevirt: token of ServiceAccount %s/%s: %w", c.o.Namespace, sa, err)
	}
	token := []byte(tr.Status.Token)
	if err := podenv.Write(c.serviceAccountDir(sa), c.o.Namespace, token, c.o.CACert); err != nil {
		return fmt.Errorf("kubevirt: %s: %w", sa, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["harvester"] = &clientcmdapi.Cluster{Server: c.o.Admin.Host, CertificateAuthorityData: c.o.CACert}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["harvester"] = &clientcmdapi.Context{Cluster: "harvester", AuthInfo: sa, Namespace: c.o.Namespace}
	cfg.CurrentContext = "harvester"
	if err := statefile.WriteKubeconfig(c.kubeconfigPath(sa), *cfg); err != nil {
		return fmt.Errorf("kubevirt: kubeconfig of %s: %w", sa, err)
	}
	return nil
}
