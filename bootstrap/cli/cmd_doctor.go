package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// errChecksFailed makes doctor exit 1 once the report is printed.
var errChecksFailed = errors.New("doctor: some checks failed (FAIL rows above)")

func doctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "doctor",
		Usage: "say why a guest cluster is unhealthy: one OK/WARN/FAIL row per check, with what was seen and the fix",
		Description: "Checks on Harvester: the cluster's VMs and their state, the creator label on VM and template, topology\n" +
			"annotations and a guest-agent address on each VMI, the cloud-provider credential (ServiceAccount, bindings,\n" +
			"token Secret, the token authenticates), the cluster's LoadBalancers and IP pools, the CSI add-on's host StorageClass\n" +
			"exists, hot-plugged volumes attached (pending volume requests, host PVCs not Bound), leftovers (as gc finds them),\n" +
			"and --kubeconfig itself (authenticates; a JWT's or certificate's expiry, WARN under 7 days).\n" +
			"With --driver-kubeconfig: the node driver's credential (authenticates, expiry, rights exactly the driver's).\n" +
			"With --cloud-config: the guest's kubeconfig for Harvester (e.g. a time-bound token from kubeconfig --ttl).\n" +
			"With --guest-kubeconfig: nodes initialised by the cloud provider, zone labels, the CCM's --cluster-name,\n" +
			"LoadBalancer Services and their Harvester LoadBalancers, kube-vip (svc_enable, vip_nodename, its RBAC, nodes it can\n" +
			"run on), each LoadBalancer announced (ingress, status.address, endpoints), LoadBalancers left behind by\n" +
			"deleted or re-created Services (as gc --guest-kubeconfig finds them), PVCs stuck Pending and VolumeAttachments\n" +
			"failing. Exit 1 when a check fails. Never prints a secret.\n\n" +
			"Example:\n  harvester-bootstrap doctor --cluster-name guest-a --namespace default --guest-kubeconfig guest.yaml",
		Flags: targetFlags(
			&ucli.StringFlag{Name: FlagGuestKubeconfig, Usage: "kubeconfig `FILE` of the guest cluster (adds the guest-side checks)", EnvVars: env(FlagGuestKubeconfig)},
			&ucli.StringFlag{Name: FlagHostStorageClass, Usage: "the CSI add-on's Harvester `STORAGECLASS` (as given to `addon`; the guest's CSI driver and StorageClasses are read too with --guest-kubeconfig): check that it exists", EnvVars: env(FlagHostStorageClass)},
			&ucli.StringFlag{Name: FlagDriverKubeconfig, Usage: "the node driver's kubeconfig `FILE` (Rancher's Harvester cloud credential): check that it authenticates, when it expires, and that its rights in --namespace are exactly the driver's", EnvVars: env(FlagDriverKubeconfig)},
			&ucli.StringFlag{Name: FlagCloudConfig, Usage: "the guest's kubeconfig `FILE` for Harvester (from `kubeconfig`): check that its token authenticates and when it expires", EnvVars: env(FlagCloudConfig)},
		),
		Action: targetAction(doctorAction),
	}
}

func doctorAction(ctx context.Context, c *ucli.Context, t clusterstate.Target, clients *clusterstate.Clients) error {
	var err error
	src := clusterstate.Sources{AdminSource: "--" + FlagKubeconfig, CloudConfigSource: "--" + FlagCloudConfig, HostStorageClass: c.String(FlagHostStorageClass)}
	if p := c.String(FlagCloudConfig); p != "" {
		if src.CloudConfig, err = kubeapi.ConfigFromFile(p, userAgent); err != nil {
			return fmt.Errorf("--%s: %w", FlagCloudConfig, err)
		}
	}
	if p := c.String(FlagDriverKubeconfig); p != "" {
		if src.Driver, err = kubeapi.ConfigFromFile(p, userAgent); err != nil {
			return fmt.Errorf("--%s: %w", FlagDriverKubeconfig, err)
		}
		src.DriverSource = "--" + FlagDriverKubeconfig
	}
	if src.Guest, err = guestClientFrom(c); err != nil {
		return err
	}
	src.GuestKubeconfig = c.String(FlagGuestKubeconfig)
	snap := clients.Take(ctx, t, src, time.Now())
	report := doctor.Run(&snap)
	if err := writeReport(c, report.WriteTable, report.WriteJSON); err != nil {
		return fmt.Errorf("doctor: write report: %w", err)
	}
	if report.Failed() {
		return errChecksFailed
	}
	return nil
}

// guestClientFrom is a client of --guest-kubeconfig's cluster, or nil
// without the flag.
func guestClientFrom(c *ucli.Context) (kubernetes.Interface, error) {
	p := c.String(FlagGuestKubeconfig)
	if p == "" {
		return nil, nil
	}
	cfg, err := kubeapi.ConfigFromFile(p, userAgent)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", FlagGuestKubeconfig, err)
	}
	guest, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", FlagGuestKubeconfig, err)
	}
	return guest, nil
}
