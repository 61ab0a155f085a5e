package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// ParseKubeconfig is the one route by which the driver reads a kubeconfig:
// it checks that the kubeconfig is usable and self-contained (no user may
// run an exec or auth-provider plugin or read a tokenFile, which would run
// a program or send a file of the host running the driver, Rancher's, to
// the kubeconfig's server; files are not read) and returns internal/kubeapi's
// client configuration of it (rate limits, retries, user agent). No secret
// of the kubeconfig appears in the error: a YAML error is reported without
// its text (it may quote the content), client-go's errors with every secret
// value redacted.
func ParseKubeconfig(s string) (*rest.Config, error) {
	cfg, err := clientcmd.Load([]byte(s))
	if err != nil {
		return nil, errors.New("is not a usable kubeconfig (plain YAML or base64 of it): it does not read as a kubeconfig (apiVersion v1, kind Config, clusters, users, contexts)")
	}
	if err := checkReferences(cfg); err != nil {
		return nil, err
	}
	var secrets []string
	for name, u := range cfg.AuthInfos {
		if u == nil {
			continue
		}
		if u.Exec != nil || u.AuthProvider != nil || u.TokenFile != "" {
			return nil, fmt.Errorf("user %q may not use exec or auth-provider plugins or a tokenFile: they would run a program or send a file "+
				"of the host running the driver; give the token (or client certificate) in the kubeconfig itself", name)
		}
		secrets = append(secrets, u.Token, u.Password, string(u.ClientKeyData))
	}
	rest, err := kubeapi.ConfigFromLoaded(cfg, BinaryName)
	if err != nil {
		return nil, fmt.Errorf("is not a usable kubeconfig (plain YAML or base64 of it): %s", redact(err.Error(), secrets))
	}
	return rest, nil
}

// redact replaces every non-empty secret in msg.
func redact(msg string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
	}
	return msg
}

// checkReferences checks that the current context and the cluster and user
// it names are defined, saying which names exist: client-go's own errors
// say "was not found", which rancher-machine reads as "the machine is gone".
func checkReferences(cfg *clientcmdapi.Config) error {
	if cfg.CurrentContext == "" {
		return fmt.Errorf("has no current-context (contexts: %s)", names(cfg.Contexts))
	}
	c := cfg.Contexts[cfg.CurrentContext]
	if c == nil {
		return fmt.Errorf("current-context %q names no context of the kubeconfig (contexts: %s)", cfg.CurrentContext, names(cfg.Contexts))
	}
	if cfg.Clusters[c.Cluster] == nil {
		return fmt.Errorf("context %q uses cluster %q, which the kubeconfig does not define (clusters: %s)", cfg.CurrentContext, c.Cluster, names(cfg.Clusters))
	}
	if c.AuthInfo != "" && cfg.AuthInfos[c.AuthInfo] == nil {
		return fmt.Errorf("context %q uses user %q, which the kubeconfig does not define (users: %s)", cfg.CurrentContext, c.AuthInfo, names(cfg.AuthInfos))
	}
	return nil
}

// names lists a kubeconfig section's names, sorted and quoted.
func names[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, fmt.Sprintf("%q", k))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
