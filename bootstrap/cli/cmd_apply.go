package cli

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/bootstrap/guest"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

func applyCommand() *ucli.Command {
	flags := append(append(credentialFlags(), cloudConfigFlag(),
		&ucli.StringFlag{Name: FlagGuestKubeconfig, Usage: "kubeconfig `FILE` of the guest cluster to install the add-ons into (required)", EnvVars: env(FlagGuestKubeconfig)},
		&ucli.BoolFlag{Name: FlagDryRun, Usage: "server-side dry run: validate everything, change nothing", EnvVars: env(FlagDryRun)},
		&ucli.BoolFlag{Name: FlagNoPrune, Usage: "keep labelled add-on objects that this version no longer renders", EnvVars: env(FlagNoPrune)},
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
			if c.String(FlagGuestKubeconfig) == "" {
				errs = append(errs, fmt.Errorf("--%s: required (the guest cluster to install into)", FlagGuestKubeconfig))
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
			cfg, err := kubeapi.ConfigFromFile(c.String(FlagGuestKubeconfig), userAgent)
			if err != nil {
				return fmt.Errorf("--%s: %w", FlagGuestKubeconfig, err)
			}
			g, err := guest.NewGuest(cfg, logger(c))
			if err != nil {
				return err
			}
			res, err := g.Apply(ctx, objs, !c.Bool(FlagNoPrune), c.Bool(FlagDryRun))
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
			if c.Bool(FlagDryRun) {
				b.WriteString("(server dry run: nothing was changed)\n")
			}
			return writeArtifact(c, []byte(b.String()), false)
		},
	}
}
