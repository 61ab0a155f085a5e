package cli

import (
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/maintenance"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// maintenance-check's own flags.
const (
	// FlagUpgrade takes every host in Harvester's upgrade order.
	FlagUpgrade = "upgrade"
	// FlagRestoreVM judges the upgrade with Harvester's restore-VM option
	// (the upgrade-config setting's restoreVM).
	FlagRestoreVM = "restore-vm"
	// FlagForce judges maintenance mode with Harvester's force option.
	FlagForce = "force"
)

// errWouldBreak makes maintenance-check exit 1 once the report is printed.
var errWouldBreak = errors.New("maintenance-check: Harvester would refuse a host, a VM would block the drain or a guest cluster would lose a quorum or a pool (see above)")

func maintenanceCheckCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "maintenance-check",
		Usage:     "say what putting hosts into maintenance, or upgrading Harvester, does to each guest-cluster VM on them",
		ArgsUsage: "HOST... | --upgrade",
		Description: "For each guest-cluster VM (label guestcluster.harvesterhci.io/name) on the hosts, by Harvester v1.8's and\n" +
			"KubeVirt v1.7's rules: migrates (naming the hosts its affinity, the taints and the room allow; the other hosts\n" +
			"being drained count as unavailable), is shut down (with KubeVirt's LiveMigratable reason), or blocks.\n" +
			"Maintenance mode: Harvester refuses it without --force while a VM's LiveMigratable is False (e.g. a vGPU,\n" +
			"LiveMigrateIfPossible or not) or no other Ready host matches its node affinity; with --force it stops those\n" +
			"VMs; then the drain migrates LiveMigrate/LiveMigrateIfPossible VMs, shuts down strategy None, and blocks on a\n" +
			"migration no host can take (phase Scheduling, then Failed after 300 s, evicted again); maintain-status is set\n" +
			"running only once the drain finished. VMs labelled harvesterhci.io/maintain-mode-strategy (Shutdown,\n" +
			"ShutdownAndRestartAfterEnable, ShutdownAndRestartAfterDisable) are shut down instead (with --force only if they\n" +
			"cannot migrate; else they stay and block). A control-plane host is refused while another is in maintenance,\n" +
			"or when it is the only one (Harvester's reason quoted; hosts named together go in one after the other). --upgrade: every host, one at a time, in Harvester's order (etcd hosts,\n" +
			"then control-plane hosts, then workers, by name); its pre-drain stops VMs with host devices, a nodeSelector or\n" +
			"a node affinity no other host matches, KubeVirt migrates the LiveMigratable ones (one no host can take is shut\n" +
			"down once its migration timed out after 300 s), it stops at once a VM whose kubevirt-evacuation-* migration\n" +
			"Failed with a FailedMigration warning event (however old: one whose target host died leaves it), and it waits for the\n" +
			"rest without limit (they block). What migrated or was shut down earlier stays so, except that with --restore-vm\n" +
			"(or restoreVM true in the upgrade-config setting) the VMs the detector stopped start again after their host;\n" +
			"without it Harvester refuses to create the Upgrade while such a VM exists.\n" +
			"Then every guest cluster that would lose its etcd quorum, its control plane or every node of a pool: roles\n" +
			"from the guest's nodes with --guest-kubeconfig (with --cluster-name), else pools by nodepool.harvesterhci.io/name.\n" +
			"Exit 1 when anything would block or a quorum or pool would be lost. Only reads. Flags go before the HOSTs.\n\n" +
			"Example:\n  harvester-bootstrap maintenance-check harvester-node-1\n" +
			"  harvester-bootstrap maintenance-check --upgrade --cluster-name guest-a --namespace default --guest-kubeconfig guest.yaml -o json",
		Flags: []ucli.Flag{
			kubeconfigFlag(),
			&ucli.BoolFlag{Name: FlagUpgrade, Usage: "every host, one at a time, in Harvester's upgrade order", EnvVars: env(FlagUpgrade)},
			&ucli.BoolFlag{Name: FlagRestoreVM, Usage: "with --upgrade: as if the upgrade-config setting had restoreVM true (the VMs the pre-drain's " +
				"detector stops start again after their host; read from the setting when it is true there)", EnvVars: env(FlagRestoreVM)},
			&ucli.BoolFlag{Name: FlagForce, Usage: "maintenance mode with Harvester's force option (stops the VMs it would otherwise refuse for)", EnvVars: env(FlagForce)},
			&ucli.StringFlag{Name: FlagNamespace, Usage: "judge only VMs of `NAMESPACE` (default: every namespace)", EnvVars: env(FlagNamespace)},
			&ucli.StringFlag{Name: FlagClusterName, Usage: "report only guest cluster `NAME` (required with --guest-kubeconfig)", EnvVars: env(FlagClusterName)},
			&ucli.StringFlag{Name: FlagGuestKubeconfig, Usage: "kubeconfig `FILE` of the guest cluster --cluster-name: its nodes' roles decide quorum (refused unless a node's providerID names a VM of that cluster, as gc does)", EnvVars: env(FlagGuestKubeconfig)},
			&ucli.StringFlag{Name: FlagOutput, Aliases: []string{"o"}, Value: OutputTable, Usage: "report `FORMAT`: " + OutputTable + " or " + OutputJSON, EnvVars: env(FlagOutput)},
			timeoutFlag(),
		},
		Action: maintenanceCheckAction,
	}
}

// maintenanceCheckFlags validates the arguments and flags together.
func maintenanceCheckFlags(c *ucli.Context) error {
	var errs []error
	hosts := c.Args().Slice()
	switch {
	case c.Bool(FlagUpgrade) && len(hosts) > 0:
		errs = append(errs, fmt.Errorf("--%s takes every host: give no HOST (got %v)", FlagUpgrade, hosts))
	case !c.Bool(FlagUpgrade) && len(hosts) == 0:
		errs = append(errs, fmt.Errorf("give the HOSTs to put into maintenance, or --%s", FlagUpgrade))
	}
	if c.Bool(FlagRestoreVM) && !c.Bool(FlagUpgrade) {
		errs = append(errs, fmt.Errorf("--%s is the upgrade's option: give it with --%s", FlagRestoreVM, FlagUpgrade))
	}
	if c.Bool(FlagUpgrade) && c.Bool(FlagForce) {
		errs = append(errs, fmt.Errorf("--%s is maintenance mode's option; an upgrade has none", FlagForce))
	}
	if o := c.String(FlagOutput); o != OutputTable && o != OutputJSON {
		errs = append(errs, fmt.Errorf("--%s %q: must be %s or %s", FlagOutput, o, OutputTable, OutputJSON))
	}
	if ns := c.String(FlagNamespace); ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s %q: must be a DNS-1123 label", FlagNamespace, ns))
		}
	}
	if c.String(FlagGuestKubeconfig) != "" && c.String(FlagClusterName) == "" {
		errs = append(errs, fmt.Errorf("--%s needs --%s (the guest cluster it belongs to)", FlagGuestKubeconfig, FlagClusterName))
	}
	return joinErrs(errs)
}

func maintenanceCheckAction(c *ucli.Context) error {
	if err := maintenanceCheckFlags(c); err != nil {
		return err
	}
	guest, err := guestClientFrom(c)
	if err != nil {
		return err
	}
	cfg, err := kubeapi.ConfigFromFile(c.String(FlagKubeconfig), userAgent)
	if err != nil {
		return err
	}
	clients, err := clusterstate.NewClients(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c)
	defer cancel()
	h, err := clients.FetchHosts(ctx, c.String(FlagNamespace))
	if err != nil {
		return fmt.Errorf("maintenance-check: %w", err)
	}
	if guest != nil {
		if h.GuestNodes, err = clusterstate.FetchGuestNodes(ctx, guest); err != nil {
			return fmt.Errorf("maintenance-check: --%s: %w", FlagGuestKubeconfig, err)
		}
		h.GuestCluster = c.String(FlagClusterName)
		if err := clusterstate.VerifyGuest(h.GuestIdentity(), &clusterstate.Guest{Nodes: h.GuestNodes}); err != nil {
			return fmt.Errorf("maintenance-check: --%s: %w", FlagGuestKubeconfig, err)
		}
	}
	res, err := maintenance.Check(&h, c.Args().Slice(), maintenance.Options{Upgrade: c.Bool(FlagUpgrade), Force: c.Bool(FlagForce), RestoreVM: c.Bool(FlagRestoreVM)})
	if err != nil {
		return fmt.Errorf("maintenance-check: %w", err)
	}
	if name := c.String(FlagClusterName); name != "" {
		res.Only(name)
	}
	if err := writeReport(c, res.WriteTable, res.WriteJSON); err != nil {
		return fmt.Errorf("maintenance-check: write report: %w", err)
	}
	if res.Failed() {
		return errWouldBreak
	}
	return nil
}
