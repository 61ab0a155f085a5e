package cli

import (
	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/bootstrap/guest"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
)

// addonFlags select and parameterise the embedded add-ons.
func addonFlags(csiDefault bool) []ucli.Flag {
	v := addons.DefaultVersions()
	return append([]ucli.Flag{
		&ucli.BoolFlag{Name: FlagCCM, Value: true, Usage: "include the Harvester cloud provider (CCM); --ccm=false to leave it out", EnvVars: env(FlagCCM)},
		&ucli.BoolFlag{Name: FlagCSI, Value: csiDefault, Usage: "include the Harvester CSI driver", EnvVars: env(FlagCSI)},
		&ucli.StringFlag{Name: FlagImageRegistry, Usage: "pull every image from `REGISTRY` (host[:port][/path]) instead of docker.io / registry.k8s.io", EnvVars: env(FlagImageRegistry)},
		&ucli.StringFlag{Name: FlagCCMVersion, Value: v.CloudProvider.Tag, Usage: "harvester-cloud-provider image `TAG`", EnvVars: env(FlagCCMVersion)},
		&ucli.StringFlag{Name: FlagCSIVersion, Value: v.CSIDriver.Tag, Usage: "harvester-csi-driver image `TAG`", EnvVars: env(FlagCSIVersion)},
		&ucli.StringFlag{Name: FlagHostStorageClass, Usage: "Harvester `STORAGECLASS` backing CSI volumes (default: Harvester's default)", EnvVars: env(FlagHostStorageClass)},
		&ucli.BoolFlag{Name: FlagKubeVIP, Value: true, Usage: "deploy kube-vip " + addons.KubeVIPVersion + " with the cloud provider (it announces LoadBalancer addresses, as Harvester's chart does); --kube-vip=false to leave it out", EnvVars: env(FlagKubeVIP)},
	}, lbFlags()...)
}

// lbFlags are the load-balancing options: kube-vip's and the cloud
// provider's network flags (RKE2 passes them through its HelmChartConfig).
func lbFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: FlagVIPInterface, Usage: "network `INTERFACE` kube-vip announces LoadBalancer addresses on (default: kube-vip detects it)", EnvVars: env(FlagVIPInterface)},
		&ucli.BoolFlag{Name: FlagTrafficPolicyLocal, Usage: "support Services with externalTrafficPolicy: Local (kube-vip on every node, svc_election on)", EnvVars: env(FlagTrafficPolicyLocal)},
		&ucli.StringFlag{Name: FlagManagementNetwork, Usage: "cloud provider " + addons.CCMManagementNetworkFlag + ": the Harvester network `NAMESPACE/NAME` whose address is the node's (VMs with several NICs)", EnvVars: env(FlagManagementNetwork)},
		&ucli.StringFlag{Name: FlagNodeIPCIDR, Usage: "cloud provider " + addons.CCMNodeIPCIDRFlag + ": node addresses only from `CIDR`", EnvVars: env(FlagNodeIPCIDR)},
		&ucli.StringSliceFlag{Name: FlagNodeExcludeIPRanges, Usage: "cloud provider " + addons.CCMNodeExcludeRangesFlag + ": never use these `IP|CIDR`s as node addresses (comma-separated or repeated)", EnvVars: env(FlagNodeExcludeIPRanges)},
	}
}

// lbOptions reads lbFlags.
func lbOptions(c *ucli.Context) addons.LoadBalancing {
	return addons.LoadBalancing{
		VIPInterface:        c.String(FlagVIPInterface),
		TrafficPolicyLocal:  c.Bool(FlagTrafficPolicyLocal),
		ManagementNetwork:   c.String(FlagManagementNetwork),
		NodeIPCIDR:          c.String(FlagNodeIPCIDR),
		NodeExcludeIPRanges: c.StringSlice(FlagNodeExcludeIPRanges),
	}
}

func addonOptions(c *ucli.Context) addons.Options {
	o := addons.DefaultOptions(c.String(FlagClusterName))
	o.CCM = c.Bool(FlagCCM)
	o.CSI = c.Bool(FlagCSI)
	o.ImageRegistry = c.String(FlagImageRegistry)
	o.Versions.CloudProvider.Tag = c.String(FlagCCMVersion)
	o.Versions.CSIDriver.Tag = c.String(FlagCSIVersion)
	o.HostStorageClass = c.String(FlagHostStorageClass)
	o.KubeVIP = c.Bool(FlagKubeVIP)
	o.LB = lbOptions(c)
	return o
}

func formatFlag(def, usage string) ucli.Flag {
	return &ucli.StringFlag{Name: FlagFormat, Value: def, Usage: usage, EnvVars: env(FlagFormat)}
}

func addonCommand() *ucli.Command {
	rke1Flags := append(append(credentialFlags(), cloudConfigFlag(), outputFlag(),
		&ucli.StringFlag{Name: FlagNodeCloudInit, Usage: "also write the node cloud-init (write_files " + nodefiles.RKE1CloudConfigPath + ") to `FILE` (0600)", EnvVars: env(FlagNodeCloudInit)}),
		addonFlags(false)...)
	rke2Flags := append(append(credentialFlags(), cloudConfigFlag(), outputFlag(),
		formatFlag(guest.FormatConfig, "config (config.yaml lines, no credential) or cloud-init (write_files with the kubeconfig, a config.yaml.d drop-in and a HelmChartConfig with the cluster name and the load-balancing options)")),
		lbFlags()...)
	k3sFlags := append(append(credentialFlags(), cloudConfigFlag(), outputFlag(),
		formatFlag(guest.FormatManifests, "manifests (file for "+nodefiles.K3sManifestsDir+"), config (K3s config.yaml lines) or cloud-init (write_files placing both)")),
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
					cyml, node, err := guest.RenderRKE1(o, kc)
					if err != nil {
						return err
					}
					if p := c.String(FlagNodeCloudInit); p != "" {
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
						return guest.RenderRKE2(c.String(FlagClusterName), lbOptions(c), kc, c.String(FlagFormat))
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
						return guest.RenderK3s(o, kc, c.String(FlagFormat))
					})
				},
			},
		},
	}
}

func manifestsCommand() *ucli.Command {
	flags := append([]ucli.Flag{
		&ucli.StringFlag{Name: FlagClusterName, Usage: "guest cluster `NAME` passed to the CCM as --cluster-name", EnvVars: env(FlagClusterName)},
		&ucli.StringFlag{Name: FlagCloudConfig, Usage: "also emit the cloud-config Secret from this Harvester kubeconfig `FILE` (output is then a credential, 0600)", EnvVars: env(FlagCloudConfig)},
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
			if p := c.String(FlagCloudConfig); p != "" {
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
	if c.String(FlagFormat) == guest.FormatConfig {
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
