// Stand-in for Harvester's upgrade of its hosts, Harvester v1.8.1: each
// host's pre-drain job, one host after the other, under an Upgrade. It follows
// https://github.com/harvester/harvester/blob/v1.8.1/package/upgrade/upgrade_node.sh.

package sim

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

func upgradeCommand() *cli.Command {
	return &cli.Command{
		Name: "upgrade",
		Usage: "take every host through Harvester v1.8's upgrade pre-drain, one after the other in its upgrade order, under an Upgrade object " +
			"(harvester-system/" + upgradeGenerateName + "*, created through Harvester's webhook, whose refusal is the command's error, labelled " +
			LabelUpgradeState + " " + UpgradeStateUpgradingNodes + " meanwhile: Harvester's node-down controller leaves the hosts alone): Harvester's own upgrade-helper " +
			"vm-live-migrate-detector --shutdown stops what cannot live-migrate, then taint kubevirt.io/drain, wait for live migration or " +
			"shutdown (stopping VMs whose kubevirt-evacuation-* migration Failed with a FailedMigration warning); then remove the taint and, " +
			"with --" + flagRestoreVM + ", run upgrade-helper restore-vm for the host; report per host; mark the Upgrade " +
			UpgradeStateSucceeded + ", or " + UpgradeStateFailed + " and exit 1 when anything blocked",
		Flags: []cli.Flag{stateDirFlag(), &cli.DurationFlag{Name: flagTimeout, Value: 5 * time.Minute, Usage: "how long each host's pre-drain may wait"},
			&cli.BoolFlag{Name: flagRestoreVM, Usage: "Harvester's restore-VM option: sets restoreVM in the setting " + settingUpgradeConfig +
				" (off without the flag), so the webhook lets VMs that cannot live-migrate through and, after each host, upgrade-helper " +
				"restore-vm starts the VMs vm-live-migrate-detector stopped on it (ConfigMap " + SystemNamespace + "/<upgrade>-restore-vm)"},
			binDirFlag("upgradehelper")},
		Before: requireStateDir,
		Action: func(c *cli.Context) error {
			kube, dyn, err := simClients(c)
			if err != nil {
				return err
			}
			binDir, err := binDirOf(c)
			if err != nil {
				return err
			}
			helper := upgradeHelper{binDir: binDir, kubeconfig: filepath.Join(stateDirOf(c), KubeconfigFile)}
			reports, err := Upgrade(c.Context, kube, dyn, helper, c.Duration(flagTimeout), c.Bool(flagRestoreVM), c.App.Writer)
			for _, r := range reports {
				r.Print(c.App.Writer)
			}
			if err != nil {
				return cli.Exit("harvester-sim: "+err.Error(), 1)
			}
			return nil
		},
	}
}

// Upgrade runs the pre-drain of each host in Harvester's upgrade order
// (hv.UpgradeOrder) under a new Upgrade object (upgrades.create, named on
// w). A host whose VMIs are not gone within timeout is reported blocked,
// and the upgrade goes on to the next host (the real one would wait
// forever); the Upgrade then ends Failed and the error names every
// blocked host. With restoreVM, the VMs vm-live-migrate-detector stopped
// on a host are started again once its post-drain is done (restoreVMs).
func Upgrade(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, helper upgradeHelper, timeout time.Duration, restoreVM bool, w io.Writer) ([]UpgradeReport, error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("upgrade: list hosts: %w", err)
	}
	api := upgrades{dyn: dyn}
	if err := api.setRestoreVM(ctx, restoreVM); err != nil {
		return nil, err
	}
	u, err := api.create(ctx)
	if err != nil {
		return nil, err
	}
	helper.upgrade = u.Name
	_, _ = fmt.Fprintf(w, "upgrade %s/%s\n", u.Namespace, u.Name)
	var reports []UpgradeReport
	var blocked []string
	for _, host := range hv.UpgradeOrder(nodes.Items) {
		rep, err := upgradeHost(ctx, kube, dyn, api, helper, host, timeout, restoreVM)
		reports = append(reports, rep)
		if err != nil {
			// As a failed node job fails the real one: the Upgrade must
			// not stay under way (it holds the node-down controller off
			// and refuses the next Upgrade).
			if ferr := api.update(context.WithoutCancel(ctx), u.Name, func(u *harvesterv1.Upgrade) { finishUpgrade(u, err.Error()) }); ferr != nil {
				return reports, fmt.Errorf("%w (and %w)", err, ferr)
			}
			return reports, err
		}
		if len(rep.Blocked) > 0 {
			blocked = append(blocked, host)
		}
	}
	failed := ""
	if len(blocked) > 0 {
		failed = "pre-drain blocked on " + strings.Join(blocked, ", ")
	}
	if err := api.update(ctx, u.Name, func(u *harvesterv1.Upgrade) { finishUpgrade(u, failed) }); err != nil {
		return reports, err
	}
	if failed != "" {
		return reports, fmt.Errorf("upgrade: %s", failed)
	}
	return reports, nil
}

// upgradeHost is one host's turn: its pre-drain and post-drain, the node
// states the job controller records for them, and with restoreVM the
// restore-vm job.
func upgradeHost(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, api upgrades, helper upgradeHelper, host string, timeout time.Duration, restoreVM bool) (UpgradeReport, error) {
	if err := api.nodeState(ctx, helper.upgrade, host, nodeStatePreDraining, ""); err != nil {
		return UpgradeReport{}, err
	}
	hr, err := preDrain(ctx, kube, dyn, api, helper, host, timeout)
	rep := UpgradeReport{HostReport: hr}
	if err != nil {
		return rep, err
	}
	state, reason := UpgradeStateSucceeded, ""
	if len(rep.Blocked) > 0 {
		state, reason = UpgradeStateFailed, "pre-drain blocked"
	} else if err := api.nodeState(ctx, helper.upgrade, host, nodeStatePostDraining, ""); err != nil {
		return rep, err
	}
	if err := setDrainTaint(ctx, kube, host, false); err != nil {
		return rep, err
	}
	if state == UpgradeStateSucceeded && restoreVM {
		if err := restoreVMs(ctx, kube, dyn, helper, host, &rep); err != nil {
			return rep, err
		}
	}
	return rep, api.nodeState(ctx, helper.upgrade, host, state, reason)
}

// preDrain is upgrade_node.sh's command_pre_drain for one host
// (upgrade_node.sh:363-378): the detector stops what cannot live-migrate
// (upgradeHelper.detect), the host is tainted kubevirt.io/drain (:372),
// then wait_vms_out_or_shutdown (:375). The job controller records the
// host Pre-drained when the job succeeds. (Rancher's own agent, Longhorn's
// engines, the evacuation PDBs and canal's config, which the script also
// waits for or removes, are not simulated.)
func preDrain(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, api upgrades, helper upgradeHelper, host string, timeout time.Duration) (HostReport, error) {
	rep := HostReport{Host: host}
	before, err := vmisOn(ctx, dyn, host)
	if err != nil {
		return rep, err
	}
	if err := helper.detect(ctx, host); err != nil {
		return rep, fmt.Errorf("pre-drain %s: %w", host, err)
	}
	if err := setDrainTaint(ctx, kube, host, true); err != nil {
		return rep, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	werr := waitVMsOutOrShutdown(waitCtx, kube, dyn, host)
	cancel()
	if werr != nil {
		rep.Blocked = blockers(ctx, kube, dyn, host, nil)
		if len(rep.Blocked) == 0 {
			rep.Blocked = []string{"pre-drain did not finish: " + werr.Error()}
		}
	}
	outcome(ctx, dyn, host, before, &rep)
	if len(rep.Blocked) > 0 {
		return rep, nil
	}
	return rep, api.nodeState(ctx, helper.upgrade, host, nodeStatePreDrained, "")
}

// waitVMsOutOrShutdown is upgrade_node.sh's wait_vms_out_or_shutdown
// (upgrade_node.sh:205-224, get_running_vm_count :175-190): until no VMI
// labelled with the host is other than Succeeded, stopping the VMs whose
// evacuation migration (kubevirt-evacuation-*) failed with a
// FailedMigration warning (checkFailedMigrations). It looks every 200ms
// (the script: 5 s).
func waitVMsOutOrShutdown(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		left, err := vmisOn(ctx, dyn, host)
		if err == nil {
			running := 0
			for k, v := range left {
				if v.Phase == kubevirtv1.Succeeded {
					continue
				}
				running++
				if v.Phase == kubevirtv1.Running {
					checkFailedMigrations(ctx, kube, dyn, k)
				}
			}
			if running == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// setDrainTaint puts kubevirt.io/drain=draining:NoSchedule on the host
// (pre-drain, `kubectl taint node --overwrite`, upgrade_node.sh:372) or
// removes it (command_post_drain, upgrade_node.sh:826).
func setDrainTaint(ctx context.Context, kube kubernetes.Interface, host string, on bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := kube.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != hv.TaintKubeVirtDrain {
				taints = append(taints, t)
			}
		}
		if on {
			taints = append(taints, corev1.Taint{Key: hv.TaintKubeVirtDrain, Value: "draining", Effect: corev1.TaintEffectNoSchedule})
		}
		n.Spec.Taints = taints
		_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("taint %s %s: %w", host, hv.TaintKubeVirtDrain, err)
	}
	return nil
}
