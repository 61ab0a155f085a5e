package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/bootstrap/loadbalancer"
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
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
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
					&ucli.StringFlag{Name: FlagService, Usage: "Service manifest `FILE` (YAML or JSON)", EnvVars: env(FlagService)},
					&ucli.StringSliceFlag{Name: FlagAnnotation, Usage: "annotation `KEY=VALUE` (repeatable; added to those of --service)", EnvVars: env(FlagAnnotation)},
					outputFlag(),
				},
				Action: func(c *ucli.Context) error {
					ann := map[string]string{}
					svcType := ""
					var errs []error
					if p := c.String(FlagService); p != "" {
						docs, err := readYAMLDocs(p)
						if err != nil || len(docs) != 1 || docs[0]["kind"] != "Service" {
							return fmt.Errorf("--%s %s: must hold exactly one Service manifest (%w)", FlagService, p, err)
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
					for _, kv := range c.StringSlice(FlagAnnotation) {
						k, v, ok := strings.Cut(kv, "=")
						if !ok {
							errs = append(errs, fmt.Errorf("--%s %q: must be KEY=VALUE", FlagAnnotation, kv))
							continue
						}
						ann[k] = v
					}
					if c.String(FlagService) == "" && len(c.StringSlice(FlagAnnotation)) == 0 {
						errs = append(errs, fmt.Errorf("give --%s FILE and/or --%s KEY=VALUE", FlagService, FlagAnnotation))
					}
					if len(errs) > 0 {
						return joinErrs(errs)
					}
					res, err := loadbalancer.CheckLoadBalancer(svcType, ann)
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
					&ucli.StringSliceFlag{Name: FlagRange, Usage: "address `RANGE` (repeatable)", EnvVars: env(FlagRange)},
					formatFlag("ippool", "ippool (loadbalancer.harvesterhci.io/v1beta1) or kubevip (ConfigMap kube-system/kubevip keys)"),
					&ucli.StringFlag{Name: FlagPoolName, Usage: "IPPool `NAME`", EnvVars: env("pool-name")},
					&ucli.StringFlag{Name: FlagNetwork, Usage: "restrict to VM network `NS/NAME`", EnvVars: env(FlagNetwork)},
					&ucli.Uint64Flag{Name: FlagPriority, Usage: "pool selection `PRIORITY`", EnvVars: env(FlagPriority)},
					&ucli.StringFlag{Name: FlagScopeProject, Usage: "scope: Rancher `PROJECT`", EnvVars: env(FlagScopeProject)},
					&ucli.StringFlag{Name: FlagScopeNamespace, Usage: "scope: `NAMESPACE` of the guest VMs (kubevip: key suffix, default global)", EnvVars: env(FlagScopeNamespace)},
					&ucli.StringFlag{Name: FlagScopeGuestCluster, Usage: "scope: guest `CLUSTER` name", EnvVars: env(FlagScopeGuestCluster)},
					&ucli.StringFlag{Name: FlagExisting, Usage: "YAML `FILE` of existing IPPools / kubevip ConfigMap; overlaps with them are rejected", EnvVars: env(FlagExisting)},
					outputFlag(),
				},
				Action: func(c *ucli.Context) error {
					var existing []loadbalancer.IPRange
					if p := c.String(FlagExisting); p != "" {
						docs, err := readYAMLDocs(p)
						if err != nil {
							return fmt.Errorf("--%s: %w", FlagExisting, err)
						}
						if existing, err = loadbalancer.ExistingRanges(docs); err != nil {
							return err
						}
					}
					ranges, err := loadbalancer.ParseIPRanges(c.StringSlice(FlagRange), existing)
					if err != nil {
						return err
					}
					var out []byte
					switch f := c.String(FlagFormat); f {
					case "ippool":
						out, err = loadbalancer.BuildIPPool(loadbalancer.PoolSpec{
							Name: c.String(FlagPoolName), Ranges: ranges, Network: c.String(FlagNetwork),
							Priority: c.Uint64(FlagPriority), Project: c.String(FlagScopeProject),
							Namespace: c.String(FlagScopeNamespace), GuestCluster: c.String(FlagScopeGuestCluster),
						})
					case "kubevip":
						out, err = loadbalancer.BuildKubeVIPConfigMap(c.String(FlagScopeNamespace), ranges)
					default:
						err = fmt.Errorf("--%s %q: must be ippool or kubevip", FlagFormat, f)
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
