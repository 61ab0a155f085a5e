package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/bootstrap/drivercred"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// driverCredentialFlags identify the driver's credential.
func driverCredentialFlags() []ucli.Flag {
	return []ucli.Flag{
		kubeconfigFlag(),
		&ucli.StringFlag{Name: FlagNamespace, Usage: "Harvester `NAMESPACE` of the driver's ServiceAccount and token Secret", EnvVars: env(FlagNamespace)},
		&ucli.StringFlag{Name: FlagServiceAccount, Value: drivercred.DefaultServiceAccount, Usage: "the driver's ServiceAccount `NAME`", EnvVars: env(FlagServiceAccount)},
		&ucli.StringSliceFlag{Name: FlagMachineNamespace, Usage: "`NAMESPACE` machines go into (--harvester-vm-namespace); repeat for several (default: --namespace)", EnvVars: env(FlagMachineNamespace)},
		&ucli.BoolFlag{Name: FlagCloudProviderRights, Usage: "also grant what --harvester-cloud-provider needs (making the guest clusters' credentials, binding the two Harvester cloud-provider ClusterRoles)", EnvVars: env(FlagCloudProviderRights)},
		&ucli.BoolFlag{Name: FlagNoRWX, Usage: "with --" + FlagCloudProviderRights + ": " + noRWXUsage, EnvVars: env(FlagNoRWX)},
		&ucli.BoolFlag{Name: FlagStaticAddressRights, Usage: "also grant what --harvester-static-address-range needs (its address claims, ConfigMaps: get, list, watch, create)", EnvVars: env(FlagStaticAddressRights)},
		timeoutFlag(),
	}
}

func driverSpecFrom(c *ucli.Context) (drivercred.Spec, error) {
	s := drivercred.Spec{
		ServiceAccount: c.String(FlagServiceAccount), Namespace: c.String(FlagNamespace),
		MachineNamespaces: c.StringSlice(FlagMachineNamespace), CloudProvider: c.Bool(FlagCloudProviderRights),
		StaticAddresses: c.Bool(FlagStaticAddressRights),
	}.WithDefaults()
	return s, s.Validate()
}

// openDriverCred connects with the admin kubeconfig.
func openDriverCred(c *ucli.Context) (*drivercred.Harvester, *credentials.Harvester, error) {
	cfg, err := kubeapi.ConfigFromFile(c.String(FlagKubeconfig), userAgent)
	if err != nil {
		return nil, nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	h, err := credentials.NewHarvester(cfg, logger(c))
	if err != nil {
		return nil, nil, err
	}
	return &drivercred.Harvester{Kube: kube, Config: cfg, Log: logger(c)}, h, nil
}

// issueDriverKubeconfig ensures (or rotates) the credential and renders
// its kubeconfig: the token Secret's token (does not expire) or, with
// --ttl, a TokenRequest bound to that Secret.
func issueDriverKubeconfig(ctx context.Context, c *ucli.Context, rotate bool) ([]byte, error) {
	// Every flag is checked before the first request.
	s, err := driverSpecFrom(c)
	err = errors.Join(err, checkTTL(c.Duration(FlagTTL)))
	if f := c.String(FlagFormat); !slices.Contains(driverKubeconfigFormats, f) {
		err = errors.Join(err, field.Invalid(credentials.FieldFormat, f, "must be kubeconfig or base64 (for Rancher's Harvester cloud credential or --harvester-kubeconfig-content)"))
	}
	if server := c.String(FlagServer); server != "" {
		err = errors.Join(err, credentials.CheckServer(server))
	}
	if c.Bool(FlagNoRWX) && !s.CloudProvider {
		err = errors.Join(err, fmt.Errorf("--%s shapes the namespace grant, which only --%s makes; add --%s or leave --%s out", FlagNoRWX, FlagCloudProviderRights, FlagCloudProviderRights, FlagNoRWX))
	}
	if err != nil {
		return nil, err
	}
	dc, h, err := openDriverCred(c)
	if err != nil {
		return nil, err
	}
	err = refuseReachingTokens(ctx, h, s)
	if err == nil && rotate {
		err = dc.Rotate(ctx, s)
	} else if err == nil {
		err = dc.Ensure(ctx, s)
	}
	if err == nil && s.CloudProvider {
		err = grantGuests(ctx, h, s, credentials.GrantOptions{NoRWX: c.Bool(FlagNoRWX)})
	}
	if err == nil {
		err = dc.WaitGrantPolicyInEffect(ctx, s)
	}
	if err != nil {
		return nil, explainAuth(err)
	}
	a := credentials.Access{ClusterName: s.ServiceAccount, Namespace: s.Namespace, ServiceAccount: s.ServiceAccount}
	kc, err := h.Kubeconfig(ctx, a, c.String(FlagServer), c.Duration(FlagTTL))
	return kc, explainAuth(err)
}

// refuseReachingTokens refuses machine namespaces holding a token Secret
// whose ServiceAccount reaches outside the namespace: the driver credential
// may read every Secret there. With --cloud-provider this tool's guest
// credentials bound cluster-wide are moved into their namespace
// (grantGuests), so they do not count.
func refuseReachingTokens(ctx context.Context, h *credentials.Harvester, s drivercred.Spec) error {
	var errs []error
	for _, ns := range s.MachineNamespaces {
		reach, err := h.ReachingOutside(ctx, ns)
		if err != nil {
			return explainAuth(err)
		}
		for _, r := range reach {
			if r.Migratable && s.CloudProvider {
				continue
			}
			fix := "delete that token Secret or that binding, or serve another namespace"
			if r.Migratable {
				fix = "bind it in " + ns + " only with `harvester-bootstrap kubeconfig rotate` (without --" + FlagCSIClusterWide + "), add --" + FlagCloudProviderRights + " (which does that), or serve another namespace"
			}
			errs = append(errs, field.Invalid(drivercred.FieldMachineNamespaces, ns, "holds the %s; the driver credential may read every Secret of its machine namespaces, so that token would be its too: %s", r, fix))
		}
	}
	return errors.Join(errs...)
}

// grantGuests gives each machine namespace the guests' grant (the driver
// makes only namespaced RoleBindings and cannot) and moves guest
// credentials made with the cluster-wide binding to RoleBindings.
func grantGuests(ctx context.Context, h *credentials.Harvester, s drivercred.Spec, o credentials.GrantOptions) error {
	for _, ns := range s.MachineNamespaces {
		if err := h.EnsureGrant(ctx, ns, o); err != nil {
			return err
		}
		migrated, err := h.MigrateNamespace(ctx, ns)
		if err != nil {
			return err
		}
		if len(migrated) > 0 {
			h.Log.Info("guest credentials now bound in their namespace only", "namespace", ns, "serviceAccounts", migrated)
		}
	}
	return nil
}

var driverKubeconfigFormats = []string{credentials.FormatKubeconfig, credentials.FormatBase64}

func driverCredentialCommand() *ucli.Command {
	flags := append(driverCredentialFlags(), outputFlag(),
		&ucli.StringFlag{Name: FlagServer, Usage: "Harvester API `URL` as Rancher reaches it (default: the server of --kubeconfig)", EnvVars: env(FlagServer)},
		&ucli.DurationFlag{Name: FlagTTL, Usage: "issue a time-bound token (TokenRequest) valid for `DURATION` (>= 10m) instead of the Secret token, which does not expire", EnvVars: env(FlagTTL)},
		&ucli.StringFlag{Name: FlagFormat, Value: credentials.FormatKubeconfig, Usage: "kubeconfig or base64", EnvVars: env(FlagFormat)})
	return &ucli.Command{
		Name:  "driver-credential",
		Usage: "create (idempotently) the node driver's own least-privilege credential on Harvester and print its kubeconfig",
		Description: "Creates or reuses ServiceAccount --service-account in --namespace, a Role and RoleBinding\n" +
			"harvester-bootstrap:driver:<namespace>:<service-account> in each --machine-namespace with exactly the verbs the\n" +
			"driver uses there (with --cloud-provider: RoleBindings, and bind on the two Harvester cloud-provider roles by\n" +
			"name), a ClusterRole and ClusterRoleBinding of that name for the few cluster-scoped reads (access reviews,\n" +
			"storage classes, nodes, three settings; on ClusterRoles and ClusterRoleBindings only, with --cloud-provider, get and\n" +
			"patch of the machine namespaces' grant bindings and bind of the grant's roles, by name), and the token Secret\n" +
			"<service-account>-token, whose token does not expire (Rancher issue 5827). With --cloud-provider it also grants\n" +
			"each machine namespace the guests' reads outside it (harvester-bootstrap:guest-namespace:<namespace>) and moves\n" +
			"guest credentials made with the old cluster-wide CSI binding to RoleBindings; a second admission policy lets the\n" +
			"driver change only the grant's subjects, to guest ServiceAccounts. Every flag and namespace is checked\n" +
			"before the first change; a failed run removes what it made. Objects of those names it did not create are\n" +
			"refused, never changed. The kubeconfig goes into\n" +
			"Rancher's Harvester cloud credential (Import Harvester Cluster: paste it) or --harvester-kubeconfig-content.\n\n" +
			"Example:\n  harvester-bootstrap driver-credential --namespace default --machine-namespace default --cloud-provider -o driver.yaml",
		Flags:  flags,
		Action: issueAction(issueDriverKubeconfig, false),
		Subcommands: []*ucli.Command{
			{
				Name:        "rotate",
				Usage:       "replace the token (every earlier one stops working) and print the new kubeconfig",
				Description: "Example:\n  harvester-bootstrap driver-credential rotate --namespace default -o driver.yaml",
				Flags:       flags,
				Action:      issueAction(issueDriverKubeconfig, true),
			},
			{
				Name:        "revoke",
				Usage:       "delete every object of the credential (found by its labels, in every namespace); nothing else",
				Description: "Example:\n  harvester-bootstrap driver-credential revoke --namespace default",
				Flags:       driverCredentialFlags(),
				Action: func(c *ucli.Context) error {
					s, err := driverSpecFrom(c)
					if err != nil {
						return err
					}
					ctx, cancel := withTimeout(c)
					defer cancel()
					dc, h, err := openDriverCred(c)
					if err != nil {
						return err
					}
					r, err := dc.Revoke(ctx, s)
					if err != nil {
						return explainAuth(err)
					}
					for _, x := range r.NotMadeByTool {
						logger(c).Warn("not made by harvester-bootstrap, left in place: a token or a guest role that a driver credential serving the namespace could read or that binds a guest role; check it", "object", x)
					}
					// A machine namespace's grant goes with the last credential bound there.
					for _, ns := range s.MachineNamespaces {
						if _, err := h.DropGrantIfUnused(ctx, ns); err != nil {
							return explainAuth(err)
						}
					}
					if len(r.Deleted) == 0 {
						logger(c).Info("nothing to revoke", "selector", s.Selector())
					}
					return nil
				},
			},
		},
	}
}
