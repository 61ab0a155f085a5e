package cli

import (
	"fmt"
	"strings"

	"github.com/harvester-kit/harvester-machine/addons"
	bs "github.com/harvester-kit/harvester-machine/bootstrap"
	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"
)

func applyCommand() *ucli.Command {
	flags := append(append(credentialFlags(), cloudConfigFlag(),
		&ucli.StringFlag{Name: bs.FlagGuestKubeconfig, Usage: "kubeconfig `FILE` of the guest cluster to install the add-ons into (required)", EnvVars: env(bs.FlagGuestKubeconfig)},
		&ucli.BoolFlag{Name: bs.FlagDryRun, Usage: "server-side dry run: validate everything, change nothing", EnvVars: env(bs.FlagDryRun)},
		&ucli.BoolFlag{Name: bs.FlagNoPrune, Usage: "keep labelled add-on objects that this version no longer renders", EnvVars: env(bs.FlagNoPrune)},
		outputFlag(),
	), addonFlags(true)...)
	return &ucli.Command{
		Name:  "apply",
		Usage: "install or upgrade the add-ons and the cloud-config Secret in a running guest cluster (server-side apply)",
		Description: "Idempotent: a second run reports every object unchanged. Objects labelled " + addons.PruneSelector + "\n" +
			"that the current version no longer renders are deleted. The Harvester kubeconfig comes from --cloud-config FILE or is\n" +
			"created like `kubeconfig` does.\n\nExample:\n" +
			"  harvester-bootstrap apply --guest-kubeconfig guest.yaml --cluster-name guest-a --namespace default \\\n    --server https://10.0.0.10:6443",
		Flags: flags,
		Action: func(c *ucli.Context) error {
			o := addonOptions(c)
			var errs []error
			if c.String(bs.FlagGuestKubeconfig) == "" {
				errs = append(errs, fmt.Errorf("%s: required (the guest cluster to install into)", bs.FlagGuestKubeconfig))
			}
			if err := o.Validate(); err != nil {
				errs = append(errs, err)
			}
			if len(errs) > 0 {
				return joinErrs(errs)
			}
			objs, _ := addons.Objects(o)
			ctx, cancel := withTimeout(c)
			defer cancel()
			kc, err := guestKubeconfig(ctx, c)
			if err != nil {
				return err
			}
			objs = append([]runtime.Object{addons.CloudConfigSecret(o, kc)}, objs...)
			cfg, err := restConfig(c.String(bs.FlagGuestKubeconfig))
			if err != nil {
				return fmt.Errorf("%s: %w", bs.FlagGuestKubeconfig, err)
			}
			g, err := bs.NewGuest(cfg, logger(c))
			if err != nil {
				return err
			}
			res, err := g.Apply(ctx, objs, !c.Bool(bs.FlagNoPrune), c.Bool(bs.FlagDryRun))
			if err != nil {
				return err
			}
			var b strings.Builder
			for _, part := range []struct {
				verb string
				ids  []string
			}{{"created", res.Created}, {"configured", res.Configured}, {"unchanged", res.Unchanged}, {"pruned", res.Pruned}} {
				for _, id := range part.ids {
					fmt.Fprintf(&b, "%s %s\n", id, part.verb)
				}
			}
			if c.Bool(bs.FlagDryRun) {
				b.WriteString("(server dry run: nothing was changed)\n")
			}
			return writeArtifact(c, []byte(b.String()), false)
		},
	}
}
