package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	bs "github.com/harvester-kit/harvester-machine/bootstrap"
	ucli "github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

func joinErrs(errs []error) error { return errors.Join(errs...) }

// readYAMLDocs decodes every document of a YAML file into generic maps.
func readYAMLDocs(path string) ([]map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); err == io.EOF {
			return docs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

func lbCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "lb",
		Usage: "LoadBalancer helpers: check Service annotations, generate IP pools",
		Subcommands: []*ucli.Command{
			{
				Name:  "check",
				Usage: "check a Service's cloudprovider.harvesterhci.io/* annotations and print their effective values",
				Description: "Exits non-zero listing every problem. Warnings (stderr) do not fail.\n\nExample:\n" +
					"  harvester-bootstrap lb check --service svc.yaml\n" +
					"  harvester-bootstrap lb check --annotation cloudprovider.harvesterhci.io/ipam=dhcp",
				Flags: []ucli.Flag{
					&ucli.StringFlag{Name: bs.FlagService, Usage: "Service manifest `FILE` (YAML or JSON)", EnvVars: env(bs.FlagService)},
					&ucli.StringSliceFlag{Name: bs.FlagAnnotation, Usage: "annotation `KEY=VALUE` (repeatable; added to those of --service)", EnvVars: env(bs.FlagAnnotation)},
					outputFlag(),
				},
				Action: func(c *ucli.Context) error {
					ann := map[string]string{}
					svcType := ""
					var errs []error
					if p := c.String(bs.FlagService); p != "" {
						docs, err := readYAMLDocs(p)
						if err != nil || len(docs) != 1 || docs[0]["kind"] != "Service" {
							return fmt.Errorf("%s %s: must hold exactly one Service manifest (%v)", bs.FlagService, p, err)
						}
						meta, _ := docs[0]["metadata"].(map[string]any)
						a, _ := meta["annotations"].(map[string]any)
						for k, v := range a {
							ann[k] = fmt.Sprint(v)
						}
						spec, _ := docs[0]["spec"].(map[string]any)
						svcType, _ = spec["type"].(string)
						if svcType == "" {
							svcType = "ClusterIP"
						}
					}
					for _, kv := range c.StringSlice(bs.FlagAnnotation) {
						k, v, ok := strings.Cut(kv, "=")
						if !ok {
							errs = append(errs, fmt.Errorf("%s %q: must be KEY=VALUE", bs.FlagAnnotation, kv))
							continue
						}
						ann[k] = v
					}
					if c.String(bs.FlagService) == "" && len(c.StringSlice(bs.FlagAnnotation)) == 0 {
						errs = append(errs, fmt.Errorf("give --%s FILE and/or --%s KEY=VALUE", bs.FlagService, bs.FlagAnnotation))
					}
					if len(errs) > 0 {
						return joinErrs(errs)
					}
					res, err := bs.CheckLoadBalancer(svcType, ann)
					for _, w := range res.Warnings {
						logger(c).Warn(w)
					}
					if err != nil {
						return fmt.Errorf("load balancer annotations:\n%w", err)
					}
					keys := make([]string, 0, len(res.Effective))
					for k := range res.Effective {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					var b strings.Builder
					for _, k := range keys {
						fmt.Fprintf(&b, "%s: %q\n", k, res.Effective[k])
					}
					return writeArtifact(c, []byte(b.String()), false)
				},
			},
			{
				Name:  "pool",
				Usage: "generate a Harvester IPPool, or kube-vip ConfigMap keys for older releases, rejecting overlapping ranges",
				Description: "--range takes CIDR (192.168.0.0/24), CIDR@START-END (192.168.0.0/24@192.168.0.10-192.168.0.20)\n" +
					"or START-END (kube-vip only).\n\nExample:\n" +
					"  harvester-bootstrap lb pool --name guest-a --range 192.168.10.0/24@192.168.10.100-192.168.10.150 \\\n" +
					"    --network default/vlan1 --scope-guest-cluster guest-a\n" +
					"  harvester-bootstrap lb pool --format kubevip --scope-namespace default --range 192.168.0.200/29",
				Flags: []ucli.Flag{
					&ucli.StringSliceFlag{Name: bs.FlagRange, Usage: "address `RANGE` (repeatable)", EnvVars: env(bs.FlagRange)},
					formatFlag("ippool", "ippool (loadbalancer.harvesterhci.io/v1beta1) or kubevip (ConfigMap kube-system/kubevip keys)"),
					&ucli.StringFlag{Name: bs.FlagPoolName, Usage: "IPPool `NAME`", EnvVars: env("pool-name")},
					&ucli.StringFlag{Name: bs.FlagNetwork, Usage: "restrict to VM network `NS/NAME`", EnvVars: env(bs.FlagNetwork)},
					&ucli.UintFlag{Name: bs.FlagPriority, Usage: "pool selection `PRIORITY`", EnvVars: env(bs.FlagPriority)},
					&ucli.StringFlag{Name: bs.FlagScopeProject, Usage: "scope: Rancher `PROJECT`", EnvVars: env(bs.FlagScopeProject)},
					&ucli.StringFlag{Name: bs.FlagScopeNamespace, Usage: "scope: `NAMESPACE` of the guest VMs (kubevip: key suffix, default global)", EnvVars: env(bs.FlagScopeNamespace)},
					&ucli.StringFlag{Name: bs.FlagScopeGuestCluster, Usage: "scope: guest `CLUSTER` name", EnvVars: env(bs.FlagScopeGuestCluster)},
					&ucli.StringFlag{Name: bs.FlagExisting, Usage: "YAML `FILE` of existing IPPools / kubevip ConfigMap; overlaps with them are rejected", EnvVars: env(bs.FlagExisting)},
					outputFlag(),
				},
				Action: func(c *ucli.Context) error {
					var existing []bs.IPRange
					if p := c.String(bs.FlagExisting); p != "" {
						docs, err := readYAMLDocs(p)
						if err != nil {
							return fmt.Errorf("%s: %w", bs.FlagExisting, err)
						}
						if existing, err = bs.ExistingRanges(docs); err != nil {
							return err
						}
					}
					ranges, err := bs.ParseIPRanges(c.StringSlice(bs.FlagRange), existing)
					if err != nil {
						return err
					}
					var out []byte
					switch f := c.String(bs.FlagFormat); f {
					case "ippool":
						out, err = bs.BuildIPPool(bs.PoolSpec{
							Name: c.String(bs.FlagPoolName), Ranges: ranges, Network: c.String(bs.FlagNetwork),
							Priority: uint32(c.Uint(bs.FlagPriority)), Project: c.String(bs.FlagScopeProject),
							Namespace: c.String(bs.FlagScopeNamespace), GuestCluster: c.String(bs.FlagScopeGuestCluster),
						})
					case "kubevip":
						out, err = bs.BuildKubeVIPConfigMap(c.String(bs.FlagScopeNamespace), ranges)
					default:
						err = fmt.Errorf("%s %q: must be ippool or kubevip", bs.FlagFormat, f)
					}
					if err != nil {
						return err
					}
					return writeArtifact(c, out, false)
				},
			},
		},
	}
}
