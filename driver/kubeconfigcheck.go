package driver

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// parseKubeconfig is the one route by which the driver reads a kubeconfig:
// it checks that the kubeconfig is usable and self-contained (no user may
// run an exec or auth-provider plugin or read a tokenFile, which would run
// a program or send a file of the host running the driver, Rancher's, to
// the kubeconfig's server; files are not read) and returns internal/kubeapi's
// client configuration of it (rate limits, retries, user agent). No secret
// of the kubeconfig appears in the error: a YAML error is reported without
// its text (it may quote the content), client-go's errors with every secret
// value redacted.
func parseKubeconfig(s string) (*rest.Config, error) {
	cfg, err := clientcmd.Load([]byte(s))
	if err != nil {
		return nil, errors.New("is not a usable kubeconfig (plain YAML or base64 of it): it does not read as a kubeconfig (apiVersion v1, kind Config, clusters, users, contexts)")
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
