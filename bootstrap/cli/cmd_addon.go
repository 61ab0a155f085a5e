package cli

import (
	"github.com/harvester-kit/harvester-machine/addons"
	bs "github.com/harvester-kit/harvester-machine/bootstrap"
	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"
)

// addonFlags select and parameterise the embedded add-ons.
func addonFlags(csiDefault bool) []ucli.Flag {
	v := addons.DefaultVersions()
	return []ucli.Flag{
		&ucli.BoolFlag{Name: bs.FlagCCM, Value: true, Usage: "include the Harvester cloud provider (CCM); --ccm=false to leave it out", EnvVars: env(bs.FlagCCM)},
		&ucli.BoolFlag{Name: bs.FlagCSI, Value: csiDefault, Usage: "include the Harvester CSI driver", EnvVars: env(bs.FlagCSI)},
		&ucli.StringFlag{Name: bs.FlagImageRegistry, Usage: "pull every image from `REGISTRY` (host[:port][/path]) instead of docker.io / registry.k8s.io", EnvVars: env(bs.FlagImageRegistry)},
		&ucli.StringFlag{Name: bs.FlagCCMVersion, Value: v.CloudProvider.Tag, Usage: "harvester-cloud-provider image `TAG`", EnvVars: env(bs.FlagCCMVersion)},
		&ucli.StringFlag{Name: bs.FlagCSIVersion, Value: v.CSIDriver.Tag, Usage: "harvester-csi-driver image `TAG`", EnvVars: env(bs.FlagCSIVersion)},
		&ucli.StringFlag{Name: bs.FlagHostStorageClass, Usage: "Harvester `STORAGECLASS` backing CSI volumes (default: Harvester's default)", EnvVars: env(bs.FlagHostStorageClass)},
	}
}

func addonOptions(c *ucli.Context) addons.Options {
	o := addons.DefaultOptions(c.String(bs.FlagClusterName))
	o.CCM = c.Bool(bs.FlagCCM)
	o.CSI = c.Bool(bs.FlagCSI)
	o.ImageRegistry = c.String(bs.FlagImageRegistry)
	o.Versions.CloudProvider.Tag = c.String(bs.FlagCCMVersion)
	o.Versions.CSIDriver.Tag = c.String(bs.FlagCSIVersion)
	o.HostStorageClass = c.String(bs.FlagHostStorageClass)
	return o
}

func formatFlag(def, usage string) ucli.Flag {
	return &ucli.StringFlag{Name: bs.FlagFormat, Value: def, Usage: usage, EnvVars: env(bs.FlagFormat)}
}

func addonCommand() *ucli.Command {
	rke1Flags := append(append(credentialFlags(), cloudConfigFlag(), outputFlag(),
		&ucli.StringFlag{Name: bs.FlagNodeCloudInit, Usage: "also write the node cloud-init (write_files " + bs.RKE1CloudConfigPath + ") to `FILE` (0600)", EnvVars: env(bs.FlagNodeCloudInit)}),
		addonFlags(false)...)
	rke2Flags := append(credentialFlags(), cloudConfigFlag(), outputFlag(),
		formatFlag(bs.FormatConfig, "config (config.yaml lines, no credential) or cloud-init (write_files with the kubeconfig, a config.yaml.d drop-in and a HelmChartConfig with the cluster name)"))
	k3sFlags := append(append(credentialFlags(), cloudConfigFlag(), outputFlag(),
		formatFlag(bs.FormatManifests, "manifests (file for "+bs.K3sManifestsDir+"), config (K3s config.yaml lines) or cloud-init (write_files placing both)")),
		addonFlags(true)...)
	return &ucli.Command{
		Name:  "addon",
		Usage: "cluster configuration for RKE1, RKE2 or K3s guest clusters",
		Subcommands: []*ucli.Command{
			{
				Name:  "rke1",
				Usage: "cluster.yml fragment: cloud_provider external and addons (cloud-config Secret, CCM, optional CSI)",
				Description: "Creates the Harvester credentials like `kubeconfig` unless --cloud-config FILE is given.\n\nExample:\n" +
					"  harvester-bootstrap addon rke1 --cluster-name guest-a --namespace default --csi \\\n    -o addons.yml --node-cloud-init node-cloud-init.yaml",
				Flags: rke1Flags,
				Action: func(c *ucli.Context) error {
					o := addonOptions(c)
					if err := o.Validate(); err != nil {
						return err
					}
					ctx, cancel := withTimeout(c)
					defer cancel()
					kc, err := guestKubeconfig(ctx, c)
					if err != nil {
						return err
					}
					cyml, node, err := bs.RenderRKE1(o, kc)
					if err != nil {
						return err
					}
					if p := c.String(bs.FlagNodeCloudInit); p != "" {
						if err := writeSecretFile(c, p, node); err != nil {
							return err
						}
					}
					return writeArtifact(c, cyml, true)
				},
			},
			{
				Name:  "rke2",
				Usage: "RKE2 config.yaml settings (cloud-provider-name: harvester) or node cloud-init",
				Description: "Example:\n  harvester-bootstrap addon rke2 --format config\n" +
					"  harvester-bootstrap addon rke2 --cluster-name guest-a --namespace default --format cloud-init -o rke2-cloud-init.yaml",
				Flags: rke2Flags,
				Action: func(c *ucli.Context) error {
					return renderClusterConfig(c, func(kc []byte) ([]byte, error) {
						return bs.RenderRKE2(c.String(bs.FlagClusterName), kc, c.String(bs.FlagFormat))
					})
				},
			},
			{
				Name:  "k3s",
				Usage: "K3s: manifests for its auto-deploy folder, config.yaml settings, or node cloud-init",
				Description: "Example:\n  harvester-bootstrap addon k3s --cluster-name guest-a --namespace default -o harvester-addons.yaml\n" +
					"  harvester-bootstrap addon k3s --format config",
				Flags: k3sFlags,
				Action: func(c *ucli.Context) error {
					o := addonOptions(c)
					return renderClusterConfig(c, func(kc []byte) ([]byte, error) {
						return bs.RenderK3s(o, kc, c.String(bs.FlagFormat))
					})
				},
			},
		},
	}
}

func manifestsCommand() *ucli.Command {
	flags := append([]ucli.Flag{
		&ucli.StringFlag{Name: bs.FlagClusterName, Usage: "guest cluster `NAME` passed to the CCM as --cluster-name", EnvVars: env(bs.FlagClusterName)},
		&ucli.StringFlag{Name: bs.FlagCloudConfig, Usage: "also emit the cloud-config Secret from this Harvester kubeconfig `FILE` (output is then a credential, 0600)", EnvVars: env(bs.FlagCloudConfig)},
		outputFlag(),
	}, addonFlags(true)...)
	return &ucli.Command{
		Name:  "manifests",
		Usage: "print the embedded, pinned CCM and CSI manifests",
		Description: "The CCM and CSI read the Harvester kubeconfig from Secret kube-system/" + addons.DefaultCloudConfigSecret + " (key " + addons.CloudConfigKey + ").\n\n" +
			"Example:\n  harvester-bootstrap manifests --cluster-name guest-a --image-registry registry.example.com/mirror > addons.yaml",
		Flags: flags,
		Action: func(c *ucli.Context) error {
			o := addonOptions(c)
			objs, err := addons.Objects(o)
			if err != nil {
				return err
			}
			secret := false
			if p := c.String(bs.FlagCloudConfig); p != "" {
				kc, err := guestKubeconfig(c.Context, c)
				if err != nil {
					return err
				}
				objs = append([]runtime.Object{addons.CloudConfigSecret(o, kc)}, objs...)
				secret = true
			}
			out, err := addons.EncodeYAML(objs)
			if err != nil {
				return err
			}
			return writeArtifact(c, out, secret)
		},
	}
}

// renderClusterConfig writes render's output. The config format needs no
// credential; the others embed the guest cluster's Harvester kubeconfig,
// which is made only after render has accepted the flags (with a stand-in
// kubeconfig), so bad input fails before any API call.
func renderClusterConfig(c *ucli.Context, render func(kubeconfig []byte) ([]byte, error)) error {
	if c.String(bs.FlagFormat) == bs.FormatConfig {
		out, err := render(nil)
		if err != nil {
			return err
		}
		return writeArtifact(c, out, false)
	}
	if _, err := render([]byte("x")); err != nil {
		return err
	}
	ctx, cancel := withTimeout(c)
	defer cancel()
	kc, err := guestKubeconfig(ctx, c)
	if err != nil {
		return err
	}
	out, err := render(kc)
	if err != nil {
		return err
	}
	return writeArtifact(c, out, true)
}
