package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/harvester-kit/harvester-machine/bootstrap/guest"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// nodePart renders the distribution-specific cloud-config for a node.
func nodePart(ctx context.Context, c *ucli.Context, dist string) ([]byte, error) {
	if dist == "" || dist == "none" {
		return nil, nil
	}
	if dist != "rke1" && dist != "rke2" && dist != "k3s" {
		return nil, fmt.Errorf("--%s %q: must be none, rke1, rke2 or k3s", FlagDistribution, dist)
	}
	kc, err := guestKubeconfig(ctx, c)
	if err != nil {
		return nil, err
	}
	switch dist {
	case "rke1":
		o := addonOptions(c)
		o.CSI = false
		_, node, err := guest.RenderRKE1(o, kc)
		return node, err
	case "rke2":
		return guest.RenderRKE2(c.String(FlagClusterName), lbOptions(c), kc, guest.FormatCloudInit)
	default:
		return guest.RenderK3s(addonOptions(c), kc, guest.FormatCloudInit)
	}
}

func readOptional(flag, path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return b, nil
}

func userdataCommand() *ucli.Command {
	flags := append(append(credentialFlags(), cloudConfigFlag(), outputFlag(),
		&ucli.StringFlag{Name: FlagDistribution, Value: "none", Usage: "add the node files of `DIST` (none, rke1, rke2, k3s); anything but none needs Harvester credentials", EnvVars: env(FlagDistribution)},
		&ucli.StringFlag{Name: FlagSSHUser, Value: "root", Usage: "login `USER` for the SSH keys", EnvVars: env(FlagSSHUser)},
		&ucli.StringSliceFlag{Name: FlagSSHPublicKey, Usage: "public key `FILE` allowed to log in (repeatable)", EnvVars: env(FlagSSHPublicKey)},
		&ucli.BoolFlag{Name: "qemu-guest-agent", Value: true, Usage: "install and enable qemu-guest-agent (needed for VM IPs on bridge networks)", EnvVars: env("qemu-guest-agent")},
		&ucli.StringFlag{Name: FlagUserData, Usage: "the user's own user data `FILE` (--harvester-user-data)", EnvVars: env(FlagUserData)},
		&ucli.StringFlag{Name: FlagInstallScript, Usage: "rancher-machine's cloud-config `FILE` (--harvester-cloud-config) with the install script", EnvVars: env(FlagInstallScript)},
	), addonFlags(true)...)
	return &ucli.Command{
		Name:  "userdata",
		Usage: "print the merged cloud-init a node VM gets (same merge code as the node driver)",
		Description: "Example:\n  harvester-bootstrap userdata --ssh-public-key ~/.ssh/id_ed25519.pub --user-data my.yaml\n" +
			"  harvester-bootstrap userdata --distribution rke2 --cluster-name guest-a --namespace default -o node.yaml",
		Flags: flags,
		Action: func(c *ucli.Context) error {
			var errs []error
			userData, err := readOptional(FlagUserData, c.String(FlagUserData))
			errs = append(errs, err)
			machine, err := readOptional(FlagInstallScript, c.String(FlagInstallScript))
			errs = append(errs, err)
			var keys []string
			for _, p := range c.StringSlice(FlagSSHPublicKey) {
				b, err := readOptional(FlagSSHPublicKey, p)
				errs = append(errs, err)
				keys = append(keys, string(trimNL(b)))
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
			ctx, cancel := withTimeout(c)
			defer cancel()
			node, err := nodePart(ctx, c, c.String(FlagDistribution))
			if err != nil {
				return err
			}
			if len(node) > 0 {
				// node files first, rancher-machine's file last (its install script runs last)
				if machine, err = cloudinit.Build(cloudinit.Input{UserData: node, CloudConfig: machine}); err != nil {
					return fmt.Errorf("merge node files: %w", err)
				}
			}
			out, err := cloudinit.Build(cloudinit.Input{
				User: c.String(FlagSSHUser), SSHAuthorizedKeys: keys,
				InstallQemuGuestAgent: c.Bool("qemu-guest-agent"),
				UserData:              userData, CloudConfig: machine,
			})
			if err != nil {
				return fmt.Errorf("build user data: %w", err)
			}
			return writeArtifact(c, out, len(node) > 0)
		},
	}
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
