package cli

import (
	"context"
	"fmt"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// targetFlags name the guest cluster doctor and gc look at.
func targetFlags(extra ...ucli.Flag) []ucli.Flag {
	return append([]ucli.Flag{
		kubeconfigFlag(),
		&ucli.StringFlag{Name: FlagClusterName, Usage: "guest cluster `NAME` (the driver's --harvester-cluster-name, the cloud provider's --cluster-name)", EnvVars: env(FlagClusterName)},
		&ucli.StringFlag{Name: FlagNamespace, Usage: "Harvester `NAMESPACE` where the guest VMs live", EnvVars: env(FlagNamespace)},
		&ucli.StringFlag{Name: FlagOutput, Aliases: []string{"o"}, Value: OutputTable, Usage: "report `FORMAT`: " + OutputTable + " or " + OutputJSON, EnvVars: env(FlagOutput)},
		timeoutFlag(),
	}, extra...)
}

// targetFrom validates --cluster-name, --namespace and --output together.
func targetFrom(c *ucli.Context) (clusterstate.Target, error) {
	t := clusterstate.Target{Cluster: c.String(FlagClusterName), Namespace: c.String(FlagNamespace)}
	err := credentials.Access{ClusterName: t.Cluster, Namespace: t.Namespace}.Validate()
	if o := c.String(FlagOutput); o != OutputTable && o != OutputJSON {
		err = joinErrs([]error{err, fmt.Errorf("--%s %q: must be %s or %s", FlagOutput, o, OutputTable, OutputJSON)})
	}
	return t, err
}

// targetAction is the action of a command over one guest cluster's state
// (doctor, gc; flags: targetFlags): act runs with the validated target,
// the clients of --kubeconfig and a context of --timeout.
func targetAction(act func(ctx context.Context, c *ucli.Context, t clusterstate.Target, clients *clusterstate.Clients) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		t, clients, err := openTarget(c)
		if err != nil {
			return err
		}
		ctx, cancel := withTimeout(c)
		defer cancel()
		return act(ctx, c, t, clients)
	}
}

// writeReport writes a report in --output's format.
func writeReport(c *ucli.Context, table, json func(io.Writer) error) error {
	if c.String(FlagOutput) == OutputJSON {
		return json(c.App.Writer)
	}
	return table(c.App.Writer)
}

// openTarget validates the flags and connects to --kubeconfig.
func openTarget(c *ucli.Context) (clusterstate.Target, *clusterstate.Clients, error) {
	t, err := targetFrom(c)
	if err != nil {
		return t, nil, err
	}
	cfg, err := kubeapi.ConfigFromFile(c.String(FlagKubeconfig), userAgent)
	if err != nil {
		return t, nil, err
	}
	clients, err := clusterstate.NewClients(cfg)
	return t, clients, err
}
