package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

const (
	flagForce   = "force"
	flagTimeout = "timeout"
)

func maintenanceCommand() *cli.Command {
	timeout := func() cli.Flag {
		return &cli.DurationFlag{Name: flagTimeout, Value: 5 * time.Minute, Usage: "give up (exit 1, naming what blocks) after this long"}
	}
	return &cli.Command{
		Name:  "maintenance",
		Usage: "put a host into Harvester's maintenance mode or take it out: Harvester's own node actions enableMaintenanceMode/disableMaintenanceMode on its API server",
		Flags: []cli.Flag{stateDirFlag()},
		Subcommands: []*cli.Command{
			{
				Name: "enable", ArgsUsage: "HOST",
				Usage:  "call Harvester's node action enableMaintenanceMode and wait until its controllers have harvesterhci.io/maintain-status completed; exit 1 with Harvester's refusal, or naming the VMs that block it and why",
				Flags:  []cli.Flag{stateDirFlag(), &cli.BoolFlag{Name: flagForce, Usage: "Harvester's force option: stop the VMs that cannot migrate"}, timeout()},
				Before: requireStateDir,
				Action: func(c *cli.Context) error {
					host, force, err := hostThenForce(c)
					if err != nil {
						return err
					}
					kube, dyn, err := simClients(c)
					if err != nil {
						return err
					}
					ctx, cancel := context.WithTimeout(c.Context, c.Duration(flagTimeout))
					defer cancel()
					rep, err := EnterMaintenance(ctx, kube, dyn, stateDirOf(c), host, force || c.Bool(flagForce))
					rep.Print(c.App.Writer)
					if err != nil {
						return cli.Exit("harvester-sim: "+err.Error(), 1)
					}
					return nil
				},
			},
			{
				Name: "disable", ArgsUsage: "HOST",
				Usage:  "call Harvester's node action disableMaintenanceMode (uncordon, remove the kubevirt.io/drain taint and the maintenance annotations, start the VMs it restarts); exit 1 with its error",
				Flags:  []cli.Flag{stateDirFlag()},
				Before: requireStateDir,
				Action: func(c *cli.Context) error {
					host, err := oneHost(c)
					if err != nil {
						return err
					}
					kube, _, err := simClients(c)
					if err != nil {
						return err
					}
					ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
					defer cancel()
					if err := DisableMaintenance(ctx, kube, stateDirOf(c), host); err != nil {
						return cli.Exit("harvester-sim: "+err.Error(), 1)
					}
					_, err = fmt.Fprintf(c.App.Writer, "%s: maintenance mode disabled\n", host)
					return err
				},
			},
		},
	}
}

func oneHost(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", fmt.Errorf("%s: give exactly one HOST (a Node name, e.g. harvester-node-0); got %d arguments", c.Command.Name, c.NArg())
	}
	return c.Args().First(), nil
}

// hostThenForce is `enable HOST`, also written `enable HOST --force`
// (the command line Harvester's docs use): urfave/cli stops reading flags
// at HOST, so a --force after it arrives as an argument. Any other
// argument after HOST is refused, saying that flags go before it.
func hostThenForce(c *cli.Context) (string, bool, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return "", false, fmt.Errorf("%s: give exactly one HOST (a Node name, e.g. harvester-node-0); got none", c.Command.Name)
	}
	force := false
	for _, a := range args[1:] {
		switch a {
		case "--force", "-force", "--force=true":
			force = true
		default:
			return "", false, fmt.Errorf("%s: give exactly one HOST (a Node name, e.g. harvester-node-0); got %q after %s (flags other than --force go before HOST)", c.Command.Name, a, args[0])
		}
	}
	return args[0], force, nil
}
