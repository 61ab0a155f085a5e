package credentials

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
	"github.com/harvester-kit/harvester-machine/internal/field"
)

// Output formats of the kubeconfig command.
const (
	FormatKubeconfig = "kubeconfig"
	FormatBase64     = "base64"
	FormatCloudInit  = "cloud-init"
)

// KubeconfigFormats lists the valid --format values.
var KubeconfigFormats = []string{FormatKubeconfig, FormatBase64, FormatCloudInit}

// Credentials is what a guest needs to reach Harvester.
type Credentials struct {
	Server    string
	CAData    []byte
	Token     string
	Namespace string
	Cluster   string // guest cluster name, used for context names
}

// Validate reports every problem at once.
func (c Credentials) Validate() error {
	var errs []error
	if err := CheckServer(c.Server); err != nil {
		errs = append(errs, err)
	}
	if c.Token == "" {
		errs = append(errs, errors.New("the service-account token is empty"))
	}
	if c.Namespace == "" {
		errs = append(errs, field.Problem(FieldNamespace, "required"))
	}
	return errors.Join(errs...)
}

// CheckServer reports why server cannot be the Harvester API URL a guest
// uses: it must be an https:// URL with a host and, when it has one, a
// port from 1 to 65535.
func CheckServer(server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return field.Invalid(FieldServer, server, "must be an https:// URL a guest can reach, e.g. https://10.0.0.10:6443")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return field.Invalid(FieldServer, server, "port %s is not a port (1 to 65535), e.g. https://10.0.0.10:6443", p)
		}
	}
	return nil
}

// CheckFormat reports a --format that FormatKubeconfigAs does not know.
func CheckFormat(format string) error {
	if format == "" || slices.Contains(KubeconfigFormats, format) {
		return nil
	}
	return field.Invalid(FieldFormat, format, "must be one of %s", strings.Join(KubeconfigFormats, ", "))
}

// CheckKubeconfig reports why kc cannot be a guest's Harvester kubeconfig:
// it must parse as a kubeconfig whose current context names a cluster with
// a server and a user that exist in it. The content never appears in the
// error.
func CheckKubeconfig(kc []byte) error {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return errors.New("not a kubeconfig (YAML with clusters, users and contexts)")
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	switch {
	case cfg.CurrentContext == "":
		return errors.New("not a usable kubeconfig: no current-context")
	case !ok:
		return fmt.Errorf("not a usable kubeconfig: current-context %q is not among its contexts", cfg.CurrentContext)
	}
	var problems []string
	if c, ok := cfg.Clusters[ctx.Cluster]; !ok || c.Server == "" {
		problems = append(problems, fmt.Sprintf("context %q names no cluster with a server (cluster %q)", cfg.CurrentContext, ctx.Cluster))
	}
	if _, ok := cfg.AuthInfos[ctx.AuthInfo]; !ok {
		problems = append(problems, fmt.Sprintf("context %q names no user among its users (user %q)", cfg.CurrentContext, ctx.AuthInfo))
	}
	if len(problems) > 0 {
		return fmt.Errorf("not a usable kubeconfig: %s", strings.Join(problems, "; "))
	}
	return nil
}

// BuildKubeconfig renders a kubeconfig whose current context points at
// the VM namespace.
func BuildKubeconfig(c Credentials) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("build kubeconfig: %w", err)
	}
	name := "harvester"
	user := c.Cluster + "@harvester"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: c.Token}
	ctxName := c.Cluster + "@harvester/" + c.Namespace
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: c.Namespace}
	cfg.CurrentContext = ctxName
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("build kubeconfig: %w", err)
	}
	return out, nil
}

// FormatKubeconfigAs renders kc as kubeconfig, base64 or cloud-init
// write_files for both the RKE1 and RKE2 cloud-config paths.
func FormatKubeconfigAs(kc []byte, format string) ([]byte, error) {
	switch format {
	case FormatKubeconfig, "":
		return kc, nil
	case FormatBase64:
		return []byte(base64.StdEncoding.EncodeToString(kc) + "\n"), nil
	case FormatCloudInit:
		return nodefiles.CloudConfig{WriteFiles: []cloudinit.WriteFile{
			cloudinit.SecretFile(nodefiles.RKE1CloudConfigPath, kc),
			cloudinit.SecretFile(nodefiles.RKE2CloudConfigPath, kc),
		}}.Marshal()
	}
	return nil, CheckFormat(format)
}
