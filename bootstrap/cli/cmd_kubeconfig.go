package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// accessFlags identify the guest cluster's Harvester identity.
func accessFlags() []ucli.Flag {
	return []ucli.Flag{
		kubeconfigFlag(),
		&ucli.StringFlag{Name: FlagClusterName, Usage: "guest cluster `NAME` (names the ServiceAccount and the load balancers)", EnvVars: env(FlagClusterName)},
		&ucli.StringFlag{Name: FlagNamespace, Usage: "Harvester `NAMESPACE` where the guest VMs live", EnvVars: env(FlagNamespace)},
		&ucli.StringFlag{Name: FlagServiceAccount, Usage: "ServiceAccount `NAME` on Harvester (default: the cluster name)", EnvVars: env(FlagServiceAccount)},
		timeoutFlag(),
	}
}

// credentialFlags add what shapes the emitted kubeconfig.
func credentialFlags() []ucli.Flag {
	return append(accessFlags(),
		&ucli.StringFlag{Name: FlagServer, Usage: "Harvester API `URL` as reachable from the guests, e.g. the VIP https://10.0.0.10:6443 (default: the server of --kubeconfig)", EnvVars: env(FlagServer)},
		&ucli.DurationFlag{Name: FlagTTL, Usage: "issue a time-bound token (TokenRequest) valid for `DURATION` (>= 10m) instead of the long-lived Secret token", EnvVars: env(FlagTTL)},
		&ucli.BoolFlag{Name: FlagCSIClusterWide, Usage: "bind " + harvester.CSIDriverRole + " with a ClusterRoleBinding, as Harvester's own kubeconfig endpoint does. " +
			"WARNING: the guest's token may then patch every VM (disks, cloud-init, run strategy) and touch every snapshot and backup in EVERY namespace; " +
			"by default it is bound in --namespace only", EnvVars: env(FlagCSIClusterWide)},
		&ucli.BoolFlag{Name: FlagNoRWX, Usage: noRWXUsage, EnvVars: env(FlagNoRWX)},
	)
}

func accessFrom(c *ucli.Context) (credentials.Access, error) {
	a := credentials.Access{
		ClusterName: c.String(FlagClusterName), Namespace: c.String(FlagNamespace), ServiceAccount: c.String(FlagServiceAccount),
		CSIClusterWide: c.Bool(FlagCSIClusterWide),
	}.WithDefaults()
	return a, a.Validate()
}

// maxTTL is the API server's maximum for a TokenRequest: 2^32 seconds.
const maxTTL = (1 << 32) * time.Second

func checkTTL(ttl time.Duration) error {
	switch {
	case ttl < 0 || ttl != 0 && ttl < 10*time.Minute:
		return fmt.Errorf("--%s %s: must be at least 10m (the API server's minimum for TokenRequest)", FlagTTL, ttl)
	case ttl > maxTTL:
		return fmt.Errorf("--%s %s: must be at most %s (2^32 s, the API server's maximum for TokenRequest); or leave it out for a token that does not expire", FlagTTL, ttl, maxTTL)
	}
	return nil
}

// issueKubeconfig ensures the Harvester objects and returns the kubeconfig.
// Every flag is checked before anything is created.
func issueKubeconfig(ctx context.Context, c *ucli.Context, rotate bool) ([]byte, error) {
	a, err := accessFrom(c)
	err = errors.Join(err, checkTTL(c.Duration(FlagTTL)), credentials.CheckFormat(c.String(FlagFormat)))
	if server := c.String(FlagServer); server != "" {
		err = errors.Join(err, credentials.CheckServer(server))
	}
	if err != nil {
		return nil, err
	}
	cfg, err := kubeapi.ConfigFromFile(c.String(FlagKubeconfig), userAgent)
	if err != nil {
		return nil, err
	}
	h, err := credentials.NewHarvester(cfg, logger(c))
	if err != nil {
		return nil, err
	}
	// A token reaching every namespace never goes where a driver credential reads.
	err = h.CheckClusterWide(ctx, a)
	if err == nil && rotate {
		err = h.Rotate(ctx, a)
	} else if err == nil {
		err = h.EnsureAccess(ctx, a)
	}
	if err == nil && !a.CSIClusterWide {
		err = confine(ctx, h, a, credentials.GrantOptions{NoRWX: c.Bool(FlagNoRWX)})
	}
	if err != nil {
		return nil, explainAuth(err)
	}
	kc, err := h.Kubeconfig(ctx, a, c.String(FlagServer), c.Duration(FlagTTL))
	return kc, explainAuth(err)
}

// confine gives a's namespace its grant (the reads outside it), then drops
// the cluster-wide binding a credential made before may still have.
func confine(ctx context.Context, h *credentials.Harvester, a credentials.Access, o credentials.GrantOptions) error {
	if err := h.EnsureGrant(ctx, a.Namespace, o); err != nil {
		return err
	}
	_, err := h.DropClusterWide(ctx, a)
	return err
}

// explainAuth makes a 401 from Harvester actionable.
func explainAuth(err error) error {
	return (&kubeapi.CredentialsRejectedError{Source: "--" + FlagKubeconfig}).Wrap(err)
}

// guestKubeconfig returns --cloud-config FILE when given, else issues one.
func guestKubeconfig(ctx context.Context, c *ucli.Context) ([]byte, error) {
	if p := c.String(FlagCloudConfig); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagCloudConfig, err)
		}
		if err := credentials.CheckKubeconfig(b); err != nil {
			return nil, fmt.Errorf("--%s %s: %w (give a kubeconfig made by `harvester-bootstrap kubeconfig`)", FlagCloudConfig, p, err)
		}
		return b, nil
	}
	return issueKubeconfig(ctx, c, false)
}

func cloudConfigFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagCloudConfig, Usage: "use this previously generated Harvester kubeconfig `FILE` instead of creating one (skips --kubeconfig)", EnvVars: env(FlagCloudConfig)}
}

// issueAction issues a kubeconfig with issue and writes it in --format.
func issueAction(issue func(context.Context, *ucli.Context, bool) ([]byte, error), rotate bool) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		ctx, cancel := withTimeout(c)
		defer cancel()
		kc, err := issue(ctx, c, rotate)
		if err != nil {
			return err
		}
		out, err := credentials.FormatKubeconfigAs(kc, c.String(FlagFormat))
		if err != nil {
			return err
		}
		return writeArtifact(c, out, true)
	}
}

func kubeconfigCommand() *ucli.Command {
	flags := append(credentialFlags(), outputFlag(),
		&ucli.StringFlag{Name: FlagFormat, Value: credentials.FormatKubeconfig, Usage: "kubeconfig, base64 or cloud-init (write_files for " + nodefiles.RKE1CloudConfigPath + " and " + nodefiles.RKE2CloudConfigPath + ")", EnvVars: env(FlagFormat)})
	return &ucli.Command{
		Name:  "kubeconfig",
		Usage: "create (idempotently) the guest cluster's ServiceAccount, bindings and token on Harvester and print its kubeconfig",
		Description: "Creates or reuses ServiceAccount <service-account>, RoleBindings <sa>-cloudprovider (harvesterhci.io:cloudprovider)\n" +
			"and <sa>-csi-driver (harvesterhci.io:csi-driver) in --namespace and the token Secret <sa>-token; waits for the token.\n" +
			"The token can touch nothing in any other VM namespace. What the cloud provider and CSI driver read outside it\n" +
			"(storage classes, volume attachments, two CSI settings; shared volumes in harvester-system, Longhorn volumes in\n" +
			"longhorn-system) is granted once to the namespace's ServiceAccounts (harvester-bootstrap:guest-namespace:<namespace>).\n" +
			"A credential made with the old cluster-wide binding loses it (rotate migrates it too); --csi-cluster-wide keeps it.\n\n" +
			"Example:\n  harvester-bootstrap kubeconfig --cluster-name guest-a --namespace default \\\n    --server https://10.0.0.10:6443 -o cloud-config",
		Flags:  flags,
		Action: issueAction(issueKubeconfig, false),
		Subcommands: []*ucli.Command{
			{
				Name:        "rotate",
				Usage:       "replace the token (the old one stops working) and print the new kubeconfig",
				Description: "Example:\n  harvester-bootstrap kubeconfig rotate --cluster-name guest-a --namespace default -o cloud-config",
				Flags:       flags,
				Action:      issueAction(issueKubeconfig, true),
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
					cfg, err := kubeapi.ConfigFromFile(c.String(FlagKubeconfig), userAgent)
					if err != nil {
						return err
					}
					h, err := credentials.NewHarvester(cfg, logger(c))
					if err != nil {
						return err
					}
					deleted, err := h.Revoke(ctx, a)
					if err != nil {
						return explainAuth(err)
					}
					// The namespace's grant goes with its last credential.
					if _, err := h.DropGrantIfUnused(ctx, a.Namespace); err != nil {
						return explainAuth(err)
					}
					if len(deleted) == 0 {
						logger(c).Info("nothing to revoke", "selector", credentials.Selector(a.ClusterName), "namespace", a.Namespace)
					}
					return nil
				},
			},
		},
	}
}
