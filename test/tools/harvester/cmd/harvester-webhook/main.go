// Command harvester-webhook runs Harvester v1.8.1's admission webhook server
// (github.com/harvester/harvester/pkg/webhook/server) as a test tool of
// harvester-sim. It is not Harvester's cmd/webhook: it takes the same options
// with the standard flag package and does not import Harvester's API server
// (pkg/server) only to find its configuration.
//
// Like harvester-webhook in its Pod, it talks to the API server with the
// in-cluster configuration (KUBERNETES_SERVICE_HOST/PORT and the service
// account's files under /var/run/secrets/kubernetes.io/serviceaccount), or
// with --kubeconfig. Harvester's validators read the configuration's token
// file and CA file themselves, so a kubeconfig must name both (tokenFile,
// certificate-authority).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/harvester/harvester/pkg/webhook/config"
	"github.com/harvester/harvester/pkg/webhook/server"
	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "harvester-webhook:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var options config.Options
	var kubeconfig string
	var debug bool
	fs := flag.NewFlagSet("harvester-webhook", flag.ContinueOnError)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig naming a tokenFile and a certificate-authority file (default: the Pod's in-cluster configuration)")
	fs.StringVar(&options.Namespace, "namespace", "harvester-system", "Harvester's namespace: its certificate Secrets and Service")
	fs.IntVar(&options.Threadiness, "threadiness", 5, "controller threads")
	fs.IntVar(&options.HTTPSListenPort, "https-port", 9443, "HTTPS port to listen on")
	fs.StringVar(&options.HarvesterControllerUsername, "controller-user", "", "the Harvester controller's user name (Harvester's chart: system:serviceaccount:<namespace>:harvester)")
	fs.StringVar(&options.GarbageCollectionUsername, "gc-user", "system:serviceaccount:kube-system:generic-garbage-collector", "the user that performs garbage collection")
	fs.BoolVar(&debug, "debug", false, "debug logs")
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: every option is a flag", fs.Arg(0))
	}
	if options.HTTPSListenPort <= 0 || options.HTTPSListenPort > 65535 {
		return fmt.Errorf("--https-port %d: want a port between 1 and 65535", options.HTTPSListenPort)
	}
	if debug {
		logrus.SetLevel(logrus.DebugLevel)
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.New(ctx, cfg, &options).ListenAndServe(); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	<-ctx.Done()
	return nil
}

// restConfig is the client configuration: in-cluster, or the kubeconfig's.
// Harvester's validators read the token file and the CA file at start, so
// both must be files.
func restConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	if cfg.BearerTokenFile == "" || cfg.CAFile == "" {
		return nil, errors.New("client configuration: Harvester's webhook reads a service account token file and a CA file; " +
			"give a kubeconfig with tokenFile and certificate-authority, or run it with a Pod's service account files")
	}
	return cfg, nil
}
