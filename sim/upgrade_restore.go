package sim

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// The restore-VM option of Harvester v1.8's upgrade (the upgrade-config
// setting's restoreVM; pkg/upgradehelper/vmlivemigratedetector,
// pkg/upgradehelper/restorevm, pkg/controller/master/upgrade
// job_controller.go sendRestoreVMJob), as the simulator plays it.
const (
	// flagRestoreVM is named after the setting's field restoreVM.
	flagRestoreVM = "restore-vm"
	// simUpgradeName stands for the Upgrade object's name (the simulator
	// serves no Upgrade objects).
	simUpgradeName = "hvst-upgrade-sim"
	// restoreVMConfigMap is util.GetRestoreVMConfigMapName: the upgrade's
	// name and "restore-vm" (name.SafeConcatName), in harvester-system.
	restoreVMConfigMap = simUpgradeName + "-restore-vm"
	// upgradeRepoLabel marks the upgrade repository VM, never restored.
	upgradeRepoLabel = "harvesterhci.io/upgrade"
	// witnessLabel is util.HarvesterWitnessNodeLabelKey: no restore-vm
	// job on such a host.
	witnessLabel = "node-role.harvesterhci.io/witness"
)

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

// recordRestoreVMs is vm-live-migrate-detector's getRestoreVMNames and
// createOrUpdateConfigMap (run with --upgrade, whatever the option): the
// VMs it is about to stop, less a VMI whose condition Paused is True and
// the upgrade repository VM, comma-separated under the host's key of the
// ConfigMap (created, else updated).
func recordRestoreVMs(ctx context.Context, kube kubernetes.Interface, host string, vmis []*kubevirtv1.VirtualMachineInstance, stops []string) error {
	skip := map[string]bool{}
	for _, vmi := range vmis {
		if vmi.Labels[upgradeRepoLabel] != "" || pausedVMI(vmi) {
			skip[vmi.Namespace+"/"+vmi.Name] = true
		}
	}
	var names []string
	for _, s := range stops {
		if !skip[s] {
			names = append(names, s)
		}
	}
	cms := kube.CoreV1().ConfigMaps(SystemNamespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cm, err := cms.Get(ctx, restoreVMConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: restoreVMConfigMap, Namespace: SystemNamespace},
				Data: map[string]string{host: strings.Join(names, ",")}}
			if _, err = cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), restoreVMConfigMap, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[host] = strings.Join(names, ",")
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("pre-drain %s: vm-live-migrate-detector: configmap %s/%s: %w", host, SystemNamespace, restoreVMConfigMap, err)
	}
	return nil
}

func pausedVMI(vmi *kubevirtv1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstancePaused && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// restoreVMs is what follows the host's post-drain with the option: the
// job controller's sendRestoreVMJob (no job on a witness host, nor when
// the ConfigMap or the host's entry is missing or blank) and the
// restore-vm job (restorevm.Run: the names split at commas and trimmed,
// each started through virt-api's start subresource, a failure recorded
// and the next one started). restorevm waits for virt-api's health first;
// the simulator's virt-api is up whenever the simulator is. On Harvester
// the job runs after the host's upgrade and reboot, long after KubeVirt
// deleted the stopped VMs' VMIs; here it waits for that deletion (which
// finalizers, Harvester's VMController.BackfillObservedNetworkMacAddress
// among them, may hold a moment): a start while the old VMI is still
// there, Succeeded, leaves a RerunOnFailure VM stopped.
func restoreVMs(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string, rep *UpgradeReport) error {
	node, err := kube.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("restore vms of %s: get host: %w", host, err)
	}
	if _, witness := node.Labels[witnessLabel]; witness {
		return nil
	}
	cm, err := kube.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, restoreVMConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore vms of %s: get configmap %s: %w", host, restoreVMConfigMap, err)
	}
	for _, key := range strings.Split(cm.Data[host], ",") {
		key = strings.TrimSpace(key)
		ns, name, ok := strings.Cut(key, "/")
		if key == "" || !ok {
			continue
		}
		if err := waitVMIGone(ctx, dyn, ns, name); err != nil {
			rep.RestoreFailed = append(rep.RestoreFailed, key+": "+err.Error())
			continue
		}
		err := kube.CoreV1().RESTClient().Put().AbsPath("/apis/subresources.kubevirt.io/v1/namespaces", ns, "virtualmachines", name, "start").
			Body([]byte("{}")).SetHeader("Content-Type", "application/json").Do(ctx).Error()
		if err != nil {
			rep.RestoreFailed = append(rep.RestoreFailed, key+": "+err.Error())
			continue
		}
		rep.Restored = append(rep.Restored, key)
	}
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
