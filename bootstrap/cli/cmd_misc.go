package cli

import (
	"errors"
	"fmt"
	"os"

	bs "github.com/harvester-kit/harvester-machine/bootstrap"
	ucli "github.com/urfave/cli/v2"
)

func affinityCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "affinity",
		Usage: "JSON (or base64) for --harvester-vm-affinity: pin a node pool to zones/regions and spread it over hosts",
		Description: "Pinning keeps rebuilt VMs in their zone (the cloud provider labels nodes from the host's zone).\n\nExample:\n" +
			"  harvester-bootstrap affinity --zone zone-a --spread-label harvesterhci.io/machineSetName=guest-a-pool1 --format base64",
		Flags: []ucli.Flag{
			&ucli.StringSliceFlag{Name: bs.FlagZone, Usage: "allowed topology.kubernetes.io/zone `ZONE` (repeatable)", EnvVars: env(bs.FlagZone)},
			&ucli.StringSliceFlag{Name: bs.FlagRegion, Usage: "allowed topology.kubernetes.io/region `REGION` (repeatable)", EnvVars: env(bs.FlagRegion)},
			&ucli.StringFlag{Name: bs.FlagSpreadLabel, Usage: "spread VMs carrying `KEY=VALUE` over hosts (kubernetes.io/hostname)", EnvVars: env(bs.FlagSpreadLabel)},
			&ucli.BoolFlag{Name: bs.FlagRequired, Usage: "make spreading a hard rule (at most one VM of the pool per host)", EnvVars: env(bs.FlagRequired)},
			formatFlag("json", "json or base64"),
			outputFlag(),
		},
		Action: func(c *ucli.Context) error {
			aff, err := bs.BuildAffinity(bs.AffinitySpec{
				Zones: c.StringSlice(bs.FlagZone), Regions: c.StringSlice(bs.FlagRegion),
				SpreadLabel: c.String(bs.FlagSpreadLabel), Required: c.Bool(bs.FlagRequired),
			})
			if err != nil {
				return err
			}
			out, err := bs.FormatAffinity(aff, c.String(bs.FlagFormat))
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
			&ucli.StringFlag{Name: bs.FlagURL, Usage: "download `URL` of the driver binary (or tar.gz) Rancher fetches", EnvVars: env(bs.FlagURL)},
			&ucli.StringFlag{Name: bs.FlagUIURL, Usage: "optional UI extension `URL`", EnvVars: env(bs.FlagUIURL)},
			&ucli.StringFlag{Name: bs.FlagDriverName, Value: "harvester", Usage: "NodeDriver `NAME`", EnvVars: env("driver-name")},
			&ucli.StringSliceFlag{Name: bs.FlagWhitelistDomain, Usage: "extra whitelisted `DOMAIN` (the URL hosts are added)", EnvVars: env(bs.FlagWhitelistDomain)},
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
			sum, err := bs.SHA256(f)
			if err != nil {
				return err
			}
			out, err := bs.BuildNodeDriver(bs.NodeDriverSpec{
				Name: c.String(bs.FlagDriverName), URL: c.String(bs.FlagURL), UIURL: c.String(bs.FlagUIURL),
				Checksum: sum, WhitelistDomains: c.StringSlice(bs.FlagWhitelistDomain),
			})
			if err != nil {
				return err
			}
			return writeArtifact(c, out, false)
		},
	}
}
