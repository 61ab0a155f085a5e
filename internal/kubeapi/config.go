package kubeapi

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Client-side rate limits of every client this project builds.
const (
	QPS   = 20
	Burst = 40
)

// ConfigFromKubeconfig builds a client configuration from kubeconfig
// content. userAgent names the tool in the API server's audit log.
func ConfigFromKubeconfig(kubeconfig []byte, userAgent string) (*rest.Config, error) {
	loaded, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	return ConfigFromLoaded(loaded, userAgent)
}

// ConfigFromLoaded builds a client configuration from a kubeconfig already
// loaded (clientcmd.Load), for callers that inspect it first.
func ConfigFromLoaded(kubeconfig *clientcmdapi.Config, userAgent string) (*rest.Config, error) {
	cfg, err := clientcmd.NewDefaultClientConfig(*kubeconfig, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	return tune(cfg, userAgent), nil
}

// ConfigFromFile builds a client configuration from a kubeconfig file; an
// empty path means $KUBECONFIG, then ~/.kube/config.
func ConfigFromFile(path, userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", path, err)
	}
	return tune(cfg, userAgent), nil
}

// tune sets the project's rate limits and user agent, and retries transient
// failures within each call's deadline (WithRetries).
func tune(cfg *rest.Config, userAgent string) *rest.Config {
	cfg.QPS, cfg.Burst = QPS, Burst
	cfg.UserAgent = userAgent
	cfg.Wrap(WithRetries)
	return cfg
}

// Call runs fn with a context that ends after timeout (the deadline of one
// API call); timeout <= 0 keeps the parent's deadline only.
func Call(parent context.Context, timeout time.Duration, fn func(ctx context.Context) error) error {
	if timeout <= 0 {
		return fn(parent)
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	return fn(ctx)
}
