package cli

import (
	"errors"
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/harvester-kit/harvester-machine/bootstrap/affinity"
	"github.com/harvester-kit/harvester-machine/bootstrap/nodedriver"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func affinityCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "affinity",
		Usage: "JSON (or base64) for --harvester-vm-affinity: pin a node pool to zones/regions and spread it over hosts",
		Description: "Pinning keeps rebuilt VMs in their zone (the cloud provider labels nodes from the host's zone).\n" +
			"Spreading selects the pool's VMs by the label the node driver gives them (" + harvester.LabelMachineSet + "),\n" +
			"derived from --namespace, --cluster-name and --pool (machines `<cluster>-<pool>-<suffix>`; with Rancher v2\n" +
			"provisioning the pool part includes the machine set's hash, e.g. pool1-7d9f8) or from --machine-name of any machine of the pool.\n\n" +
			"Example:\n" +
			"  harvester-bootstrap affinity --zone zone-a --namespace default --cluster-name guest-a --pool pool1 --format base64\n" +
			"  harvester-bootstrap affinity --required --machine-name guest-a-pool1-7d9f8-x7k2p",
		Flags: []ucli.Flag{
			&ucli.StringSliceFlag{Name: FlagZone, Usage: "allowed " + harvester.ZoneKey + " `ZONE` (repeatable)", EnvVars: env(FlagZone)},
			&ucli.StringSliceFlag{Name: FlagRegion, Usage: "allowed " + harvester.RegionKey + " `REGION` (repeatable)", EnvVars: env(FlagRegion)},
			&ucli.StringFlag{Name: FlagNamespace, Value: "default", Usage: "Harvester `NAMESPACE` of the pool's VMs (the driver's --harvester-vm-namespace)", EnvVars: env(FlagNamespace)},
			&ucli.StringFlag{Name: FlagClusterName, Usage: "guest cluster `NAME` (the driver's --harvester-cluster-name); with --" + FlagPool, EnvVars: env(FlagClusterName)},
			&ucli.StringFlag{Name: FlagPool, Usage: "spread the VMs of node pool `POOL` over hosts (" + harvester.HostnameKey + ")", EnvVars: env(FlagPool)},
			&ucli.StringFlag{Name: FlagMachineName, Usage: "or: spread the pool of the machine called `NAME`", EnvVars: env(FlagMachineName)},
			&ucli.BoolFlag{Name: FlagRequired, Usage: "make spreading a hard rule (at most one VM of the pool per host)", EnvVars: env(FlagRequired)},
			formatFlag(affinity.FormatJSON, "json or base64"),
			outputFlag(),
		},
		Action: func(c *ucli.Context) error {
			aff, err := affinity.Build(affinity.Spec{
				Zones: c.StringSlice(FlagZone), Regions: c.StringSlice(FlagRegion),
				Namespace: c.String(FlagNamespace), ClusterName: c.String(FlagClusterName),
				Pool: c.String(FlagPool), MachineName: c.String(FlagMachineName),
				Required: c.Bool(FlagRequired),
			})
			if err != nil {
				return err
			}
			out, err := affinity.Format(aff, c.String(FlagFormat))
			if err != nil {
				return err
			}
			return writeArtifact(c, out, false)
		},
	}
}

func nodedriverCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "nodedriver",
		Usage:     "NodeDriver manifest for Rancher's Node Drivers page, with the binary's sha256",
		ArgsUsage: "BINARY",
		Description: "Example:\n  harvester-bootstrap nodedriver --url https://example.com/docker-machine-driver-harvester \\\n" +
			"    bin/docker-machine-driver-harvester | kubectl apply -f -",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: FlagURL, Usage: "download `URL` of the driver binary (or tar.gz) Rancher fetches", EnvVars: env(FlagURL)},
			&ucli.StringFlag{Name: FlagUIURL, Usage: "optional UI extension `URL`", EnvVars: env(FlagUIURL)},
			&ucli.StringFlag{Name: FlagDriverName, Value: "harvester", Usage: "NodeDriver `NAME`", EnvVars: env("driver-name")},
			&ucli.StringSliceFlag{Name: FlagWhitelistDomain, Usage: "extra whitelisted `DOMAIN` (the URL hosts are added)", EnvVars: env(FlagWhitelistDomain)},
			outputFlag(),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return errors.New("nodedriver: exactly one argument BINARY (the file at --url) is required")
			}
			f, err := os.Open(c.Args().First())
			if err != nil {
				return fmt.Errorf("nodedriver: %w", err)
			}
			defer f.Close()
			sum, err := nodedriver.SHA256(f)
			if err != nil {
				return err
			}
			out, err := nodedriver.BuildNodeDriver(nodedriver.NodeDriverSpec{
				Name: c.String(FlagDriverName), URL: c.String(FlagURL), UIURL: c.String(FlagUIURL),
				Checksum: sum, WhitelistDomains: c.StringSlice(FlagWhitelistDomain),
			})
			if err != nil {
				return err
			}
			return writeArtifact(c, out, false)
		},
	}
}
