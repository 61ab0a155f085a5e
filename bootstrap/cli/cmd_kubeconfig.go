package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	bs "github.com/harvester-kit/harvester-machine/bootstrap"
	ucli "github.com/urfave/cli/v2"
)

// accessFlags identify the guest cluster's Harvester identity.
func accessFlags() []ucli.Flag {
	return []ucli.Flag{
		kubeconfigFlag(),
		&ucli.StringFlag{Name: bs.FlagClusterName, Usage: "guest cluster `NAME` (names the ServiceAccount and the load balancers)", EnvVars: env(bs.FlagClusterName)},
		&ucli.StringFlag{Name: bs.FlagNamespace, Usage: "Harvester `NAMESPACE` where the guest VMs live", EnvVars: env(bs.FlagNamespace)},
		&ucli.StringFlag{Name: bs.FlagServiceAccount, Usage: "ServiceAccount `NAME` on Harvester (default: the cluster name)", EnvVars: env(bs.FlagServiceAccount)},
		timeoutFlag(),
	}
}

// credentialFlags add what shapes the emitted kubeconfig.
func credentialFlags() []ucli.Flag {
	return append(accessFlags(),
		&ucli.StringFlag{Name: bs.FlagServer, Usage: "Harvester API `URL` as reachable from the guests, e.g. the VIP https://10.0.0.10:6443 (default: the server of --kubeconfig)", EnvVars: env(bs.FlagServer)},
		&ucli.DurationFlag{Name: bs.FlagTTL, Usage: "issue a time-bound token (TokenRequest) valid for `DURATION` (>= 10m) instead of the long-lived Secret token", EnvVars: env(bs.FlagTTL)},
	)
}

func accessFrom(c *ucli.Context) (bs.Access, error) {
	a := bs.Access{ClusterName: c.String(bs.FlagClusterName), Namespace: c.String(bs.FlagNamespace), ServiceAccount: c.String(bs.FlagServiceAccount)}.WithDefaults()
	return a, a.Validate()
}

func checkTTL(ttl time.Duration) error {
	if ttl != 0 && ttl < 10*time.Minute {
		return fmt.Errorf("%s %s: must be at least 10m (the API server's minimum for TokenRequest)", bs.FlagTTL, ttl)
	}
	return nil
}

// issueKubeconfig ensures the Harvester objects and returns the kubeconfig.
func issueKubeconfig(ctx context.Context, c *ucli.Context, rotate bool) ([]byte, error) {
	a, err := accessFrom(c)
	err = errors.Join(err, checkTTL(c.Duration(bs.FlagTTL)))
	if err != nil {
		return nil, err
	}
	cfg, err := restConfig(c.String(bs.FlagKubeconfig))
	if err != nil {
		return nil, err
	}
	h, err := bs.NewHarvester(cfg, logger(c))
	if err != nil {
		return nil, err
	}
	if rotate {
		err = h.Rotate(ctx, a)
	} else {
		err = h.EnsureAccess(ctx, a)
	}
	if err != nil {
		return nil, explainAuth(err)
	}
	return h.Kubeconfig(ctx, a, c.String(bs.FlagServer), c.Duration(bs.FlagTTL))
}

// explainAuth makes 401s actionable.
func explainAuth(err error) error {
	if err != nil && strings.Contains(err.Error(), "Unauthorized") {
		return fmt.Errorf("%w\nthe Harvester credentials in --%s were rejected (401 Unauthorized): the token may have expired; download a fresh kubeconfig from Harvester", err, bs.FlagKubeconfig)
	}
	return err
}

// guestKubeconfig returns --cloud-config FILE when given, else issues one.
func guestKubeconfig(ctx context.Context, c *ucli.Context) ([]byte, error) {
	if p := c.String(bs.FlagCloudConfig); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", bs.FlagCloudConfig, err)
		}
		return b, nil
	}
	return issueKubeconfig(ctx, c, false)
}

func cloudConfigFlag() ucli.Flag {
	return &ucli.StringFlag{Name: bs.FlagCloudConfig, Usage: "use this previously generated Harvester kubeconfig `FILE` instead of creating one (skips --kubeconfig)", EnvVars: env(bs.FlagCloudConfig)}
}

func kubeconfigAction(rotate bool) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		ctx, cancel := withTimeout(c)
		defer cancel()
		kc, err := issueKubeconfig(ctx, c, rotate)
		if err != nil {
			return err
		}
		out, err := bs.FormatKubeconfigAs(kc, c.String(bs.FlagFormat))
		if err != nil {
			return err
		}
		return writeArtifact(c, out, true)
	}
}

func kubeconfigCommand() *ucli.Command {
	flags := append(credentialFlags(), outputFlag(),
		&ucli.StringFlag{Name: bs.FlagFormat, Value: bs.FormatKubeconfig, Usage: "kubeconfig, base64 or cloud-init (write_files for " + bs.RKE1CloudConfigPath + " and " + bs.RKE2CloudConfigPath + ")", EnvVars: env(bs.FlagFormat)})
	return &ucli.Command{
		Name:  "kubeconfig",
		Usage: "create (idempotently) the guest cluster's ServiceAccount, bindings and token on Harvester and print its kubeconfig",
		Description: "Creates or reuses ServiceAccount <service-account>, RoleBinding <sa>-cloudprovider (harvesterhci.io:cloudprovider)\n" +
			"in --namespace, a ClusterRoleBinding to harvesterhci.io:csi-driver and the token Secret <sa>-token; waits for the token.\n\n" +
			"Example:\n  harvester-bootstrap kubeconfig --cluster-name guest-a --namespace default \\\n    --server https://10.0.0.10:6443 -o cloud-config",
		Flags:  flags,
		Action: kubeconfigAction(false),
		Subcommands: []*ucli.Command{
			{
				Name:        "rotate",
				Usage:       "replace the token (the old one stops working) and print the new kubeconfig",
				Description: "Example:\n  harvester-bootstrap kubeconfig rotate --cluster-name guest-a --namespace default -o cloud-config",
				Flags:       flags,
				Action:      kubeconfigAction(true),
			},
			{
				Name:        "revoke",
				Usage:       "delete exactly what `kubeconfig` created for the service account (--service-account, default the cluster name); nothing of other service accounts",
				Description: "Example:\n  harvester-bootstrap kubeconfig revoke --cluster-name guest-a --namespace default",
				Flags:       accessFlags(),
				Action: func(c *ucli.Context) error {
					a, err := accessFrom(c)
					if err != nil {
						return err
					}
					ctx, cancel := withTimeout(c)
					defer cancel()
					cfg, err := restConfig(c.String(bs.FlagKubeconfig))
					if err != nil {
						return err
					}
					h, err := bs.NewHarvester(cfg, logger(c))
					if err != nil {
						return err
					}
					deleted, err := h.Revoke(ctx, a)
					if err != nil {
						return explainAuth(err)
					}
					if len(deleted) == 0 {
						logger(c).Info("nothing to revoke", "selector", bs.Selector(a.ClusterName), "namespace", a.Namespace)
					}
					return nil
				},
			},
		},
	}
}
