package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/controllers"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

func upgradeCommand() *cli.Command {
	return &cli.Command{
		Name: "upgrade",
		Usage: "take every host through Harvester v1.8's upgrade pre-drain, one after the other in its upgrade order: stop what vm-live-migrate-detector stops, " +
			"taint kubevirt.io/drain, wait for live migration or shutdown (stopping VMs whose kubevirt-evacuation-* migration Failed with a FailedMigration " +
			"warning); then remove the taint and, with --" + flagRestoreVM + ", start again what the detector stopped; report per host; exit 1 when anything blocked",
		Flags: []cli.Flag{stateDirFlag(), &cli.DurationFlag{Name: flagTimeout, Value: 5 * time.Minute, Usage: "how long each host's pre-drain may wait"},
			&cli.BoolFlag{Name: flagRestoreVM, Usage: "Harvester's restore-VM option (setting upgrade-config, restoreVM true): after each host, start the VMs " +
				"vm-live-migrate-detector stopped on it (ConfigMap " + SystemNamespace + "/" + restoreVMConfigMap + ")"}},
		Before: requireStateDir,
		Action: func(c *cli.Context) error {
			kube, dyn, err := simClients(c)
			if err != nil {
				return err
			}
			reports, err := Upgrade(c.Context, kube, dyn, c.Duration(flagTimeout), c.Bool(flagRestoreVM))
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
// (hv.UpgradeOrder). A host whose VMIs are not gone within
// timeout is reported blocked, and the upgrade goes on to the next host
// (the real one would wait forever); the error names every blocked host.
// With restoreVM, the VMs vm-live-migrate-detector stopped on a host are
// started again once its post-drain is done (restoreVMs).
func Upgrade(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, timeout time.Duration, restoreVM bool) ([]UpgradeReport, error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("upgrade: list hosts: %w", err)
	}
	var reports []UpgradeReport
	var blocked []string
	for _, host := range hv.UpgradeOrder(nodes.Items) {
		hr, err := preDrain(ctx, kube, dyn, host, timeout)
		rep := UpgradeReport{HostReport: hr}
		if err == nil && restoreVM {
			err = restoreVMs(ctx, kube, dyn, host, &rep)
		}
		reports = append(reports, rep)
		if err != nil {
			return reports, err
		}
		if len(rep.Blocked) > 0 {
			blocked = append(blocked, host)
		}
	}
	if len(blocked) > 0 {
		return reports, fmt.Errorf("upgrade: pre-drain blocked on %s", strings.Join(blocked, ", "))
	}
	return reports, nil
}

// preDrain is upgrade_node.sh's command_pre_drain for one host, then its
// post-drain's removal of the taint.
func preDrain(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string, timeout time.Duration) (HostReport, error) {
	rep := HostReport{Host: host}
	before, err := vmisOn(ctx, dyn, host)
	if err != nil {
		return rep, err
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return rep, fmt.Errorf("pre-drain %s: list hosts: %w", host, err)
	}
	vmis, err := decodedVMIsOn(ctx, dyn, host)
	if err != nil {
		return rep, err
	}
	stops, err := hv.NonLiveMigratable(vmis, nodes.Items)
	if err != nil {
		return rep, fmt.Errorf("pre-drain %s: vm-live-migrate-detector: %w", host, err)
	}
	if err := recordRestoreVMs(ctx, kube, host, vmis, stops); err != nil {
		return rep, err
	}
	for _, key := range stops {
		ns, name, _ := strings.Cut(key, "/")
		if err := controllers.StopVM(ctx, dyn, ns, name); err != nil {
			return rep, err
		}
	}
	if err := setDrainTaint(ctx, kube, host, true); err != nil {
		return rep, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	err = waitVMsOutOrShutdown(waitCtx, kube, dyn, host)
	cancel()
	if err != nil {
		rep.Blocked = blockers(ctx, kube, dyn, host, nil)
		if len(rep.Blocked) == 0 {
			rep.Blocked = []string{"pre-drain did not finish: " + err.Error()}
		}
	}
	outcome(ctx, dyn, host, before, &rep)
	if err := setDrainTaint(ctx, kube, host, false); err != nil {
		return rep, err
	}
	return rep, nil
}

// waitVMsOutOrShutdown is upgrade_node.sh's wait_vms_out_or_shutdown:
// until no VMI labelled with the host is other than Succeeded, stopping
// the VMs whose evacuation migration (kubevirt-evacuation-*) failed with
// a FailedMigration warning (checkFailedMigrations). It looks every 200ms
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

// decodedVMIsOn lists the VMIs labelled with the host, decoded.
func decodedVMIsOn(ctx context.Context, dyn dynamic.Interface, host string) ([]*kubevirtv1.VirtualMachineInstance, error) {
	list, err := dyn.Resource(vmiGVR).Namespace("").List(ctx, metav1.ListOptions{LabelSelector: controllers.LabelVMINodeName + "=" + host})
	if err != nil {
		return nil, fmt.Errorf("list vmis on %s: %w", host, err)
	}
	out := make([]*kubevirtv1.VirtualMachineInstance, 0, len(list.Items))
	for _, u := range list.Items {
		var vmi kubevirtv1.VirtualMachineInstance
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vmi); err == nil && !vmi.IsFinal() {
			out = append(out, &vmi)
		}
	}
	return out, nil
}

// setDrainTaint puts kubevirt.io/drain=draining:NoSchedule on the host
// (pre-drain) or removes it (post-drain).
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
