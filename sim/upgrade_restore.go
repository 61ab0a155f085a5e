// Stand-in for Harvester's upgrade controller, Harvester v1.8.1: the
// restore-vm job after a host's post-drain. It follows
// https://github.com/harvester/harvester/blob/v1.8.1/pkg/controller/master/upgrade/job_controller.go.

package sim

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// flagRestoreVM is named after the setting upgrade-config's field
// restoreVM, Harvester's restore-VM option.
const flagRestoreVM = "restore-vm"

// UpgradeReport is one host's pre-drain and, with the restore-VM option,
// what its restore-vm job started again.
type UpgradeReport struct {
	HostReport
	Restored []string // "ns/name"
	// RestoreFailed: "ns/name: error" for a start that failed.
	RestoreFailed []string
}

// Print writes the host's report, then its restored VMs.
func (r UpgradeReport) Print(w io.Writer) {
	r.HostReport.Print(w)
	for _, v := range r.Restored {
		_, _ = fmt.Fprintf(w, "  %-9s %s\n", "restored", v)
	}
	for _, v := range r.RestoreFailed {
		_, _ = fmt.Fprintf(w, "  restore failed %s\n", v)
	}
}

// restoreVMs is what follows the host's post-drain with the option: the
// job controller's sendRestoreVMJob (job_controller.go: no job on a
// witness host, nor when the ConfigMap or the host's entry is missing or
// blank), then the job, Harvester's own `upgrade-helper restore-vm`
// (upgradeHelper.restore). On Harvester the job runs after the host's
// upgrade and reboot, long after KubeVirt deleted the stopped VMs' VMIs;
// here it waits for that deletion first (which finalizers, Harvester's
// VMController.BackfillObservedNetworkMacAddress among them, may hold a
// moment): a start while the old VMI is still there, Succeeded, leaves a
// RerunOnFailure VM stopped.
func restoreVMs(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, helper upgradeHelper, host string, rep *UpgradeReport) error {
	node, err := kube.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("restore vms of %s: get host: %w", host, err)
	}
	if _, witness := node.Labels[hv.LabelWitnessHost]; witness {
		return nil
	}
	name := restoreVMConfigMap(helper.upgrade)
	cm, err := kube.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore vms of %s: get configmap %s: %w", host, name, err)
	}
	if strings.TrimSpace(cm.Data[host]) == "" {
		return nil
	}
	var names []string
	for _, key := range strings.Split(cm.Data[host], ",") {
		key = strings.TrimSpace(key)
		ns, vm, ok := strings.Cut(key, "/")
		if key == "" || !ok {
			continue
		}
		if err := waitVMIGone(ctx, dyn, ns, vm); err != nil {
			return fmt.Errorf("restore vms of %s: %s: %w", host, key, err)
		}
		names = append(names, key)
	}
	started, failed, err := helper.restore(ctx, host, names)
	if err != nil {
		return fmt.Errorf("restore vms of %s: %w", host, err)
	}
	rep.Restored, rep.RestoreFailed = append(rep.Restored, started...), append(rep.RestoreFailed, failed...)
	return nil
}

// vmiGoneTimeout bounds the wait for a stopped VM's VMI to go.
const vmiGoneTimeout = time.Minute

// waitVMIGone waits until the VMI ns/name does not exist.
func waitVMIGone(ctx context.Context, dyn dynamic.Interface, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, vmiGoneTimeout)
	defer cancel()
	k := kubeapi.KindOf[*unstructured.UnstructuredList]("VirtualMachineInstance", &unstructured.Unstructured{}, dyn.Resource(vmiGVR).Namespace(ns))
	if _, err := kubeapi.Wait(ctx, k, ns, name, 0, func(u *unstructured.Unstructured) (bool, error) { return u == nil, nil }); err != nil {
		return fmt.Errorf("wait until the stopped VM's VMI is gone: %w", err)
	}
	return nil
}
