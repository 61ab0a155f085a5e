// Stand-in for Harvester's upgrade controller, Harvester v1.8.1: the
// Upgrade's labels and the states its job controller records. It follows
// https://github.com/harvester/harvester/blob/v1.8.1/pkg/controller/master/upgrade/job_controller.go.

package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// The Upgrade object a real upgrade has while its nodes upgrade
// (harvesterhci.io/v1beta1 Upgrade in harvester-system), as Harvester
// v1.8.1's upgrade controller (pkg/controller/master/upgrade) labels it.
const (
	// upgradeGenerateName is the name prefix Harvester's API gives an
	// Upgrade (pkg/api/upgrade: hvst-upgrade-xxxxx).
	upgradeGenerateName = "hvst-upgrade-"
	// LabelUpgradeState is util.LabelHarvesterUpgradeState: the node-down
	// controller (isOnUpgrade) leaves hosts alone while an Upgrade's is
	// not Succeeded or Failed, and the webhook refuses a second Upgrade.
	LabelUpgradeState = "harvesterhci.io/upgradeState"
	// labelUpgradeCleanup: the webhook refuses a new Upgrade while one's
	// is Pending.
	labelUpgradeCleanup = "harvesterhci.io/upgradeCleanup"
	labelLatestUpgrade  = "harvesterhci.io/latestUpgrade"
	// annImageCleanupDone is imageCleanupPlanCompletedAnnotation: with
	// the cleanup label Succeeded, the controller's post-upgrade cleanup
	// is done.
	annImageCleanupDone = "harvesterhci.io/image-cleanup-plan-completed"
	// The upgrade's states (job_controller.go).
	UpgradeStateUpgradingNodes = "UpgradingNodes"
	UpgradeStateSucceeded      = "Succeeded"
	UpgradeStateFailed         = "Failed"
	// Node states of status.nodeStatuses (job_controller.go).
	nodeStatePreDraining  = "Pre-draining"
	nodeStatePreDrained   = "Pre-drained"
	nodeStatePostDraining = "Post-draining"
	// settingUpgradeConfig holds the restore-VM option (restoreVM).
	settingUpgradeConfig = "upgrade-config"
)

var (
	upgradeGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "upgrades"}
	versionGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "versions"}
	settingGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
)

// buildVersion is the Version the Upgrade names: the release the
// simulator runs (no ISO is downloaded: the controller's image, repo and
// system-services steps are not played, buildUpgrade).
func buildVersion() *harvesterv1.Version {
	return &harvesterv1.Version{
		TypeMeta:   metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "Version"},
		ObjectMeta: metav1.ObjectMeta{Name: ServerVersion, Namespace: SystemNamespace},
	}
}

// buildUpgrade is an Upgrade as Harvester's upgrade controller leaves it
// once its nodes upgrade (upgrade_controller.go OnChanged): initialized
// (Completed Unknown, latestUpgrade, previousVersion), observability off
// (spec.logEnabled false: LogReady False "Disabled"), image, repo, node
// preparation and system services done (their conditions True), nodes
// upgrading (NodesUpgraded Unknown, upgradeState UpgradingNodes). Each
// step the controller would still take is past, so it only requeues its
// heartbeat: it makes no image, repo VM, Job or Plan.
func buildUpgrade() *harvesterv1.Upgrade {
	u := &harvesterv1.Upgrade{
		TypeMeta: metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "Upgrade"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: upgradeGenerateName, Namespace: SystemNamespace,
			Labels: map[string]string{LabelUpgradeState: UpgradeStateUpgradingNodes, labelLatestUpgrade: "true"}},
		Spec:   harvesterv1.UpgradeSpec{Version: ServerVersion},
		Status: harvesterv1.UpgradeStatus{PreviousVersion: ServerVersion},
	}
	now := time.Now().UTC().Format(time.RFC3339)
	harvesterv1.UpgradeCompleted.Unknown(u)
	harvesterv1.LogReady.False(u)
	harvesterv1.LogReady.Reason(u, "Disabled")
	harvesterv1.LogReady.Message(u, "Upgrade observability is administratively disabled")
	for _, c := range []interface {
		True(any)
		LastUpdated(any, string)
	}{harvesterv1.ImageReady, harvesterv1.RepoProvisioned, harvesterv1.NodesPrepared, harvesterv1.SystemServicesUpgraded} {
		c.True(u)
		c.LastUpdated(u, now)
	}
	harvesterv1.NodesUpgraded.Unknown(u)
	return u
}

// finishUpgrade marks the Upgrade as Harvester's controllers leave a
// finished one after their post-upgrade cleanup (common.go markComplete,
// upgrade_controller.go OnChanged): NodesUpgraded and Completed True and
// upgradeState Succeeded, or, when a host failed, NodesUpgraded and
// Completed False and Failed; upgradeCleanup Succeeded.
func finishUpgrade(u *harvesterv1.Upgrade, failed string) {
	if failed == "" {
		harvesterv1.NodesUpgraded.True(u)
		harvesterv1.UpgradeCompleted.True(u)
		u.Labels[LabelUpgradeState] = UpgradeStateSucceeded
	} else {
		harvesterv1.NodesUpgraded.False(u)
		harvesterv1.NodesUpgraded.Message(u, failed)
		harvesterv1.UpgradeCompleted.False(u)
		u.Labels[LabelUpgradeState] = UpgradeStateFailed
	}
	u.Labels[labelUpgradeCleanup] = UpgradeStateSucceeded
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	u.Annotations[annImageCleanupDone] = "true"
}

// upgrades is the thin layer over the Upgrade, Version and Setting calls.
type upgrades struct{ dyn dynamic.Interface }

// setRestoreVM writes the restore-VM option into the setting
// upgrade-config (its value, else its default, with restoreVM set), which
// Harvester's webhook and job controller read (util.IsRestoreVM).
func (a upgrades) setRestoreVM(ctx context.Context, on bool) error {
	settings := a.dyn.Resource(settingGVR)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := settings.Get(ctx, settingUpgradeConfig, metav1.GetOptions{})
		if err != nil {
			return err
		}
		value, _, _ := unstructured.NestedString(s.Object, "value")
		if value == "" {
			value, _, _ = unstructured.NestedString(s.Object, "default")
		}
		cfg := map[string]any{}
		if value != "" {
			if err := json.Unmarshal([]byte(value), &cfg); err != nil {
				return fmt.Errorf("value %q: %w", value, err)
			}
		}
		cfg["restoreVM"] = on
		b, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		s.Object["value"] = string(b)
		_, err = settings.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("upgrade: setting %s restoreVM %v: %w", settingUpgradeConfig, on, err)
	}
	return nil
}

// create makes the Version (when missing) and the Upgrade; Harvester's
// webhook judges the Upgrade. Earlier Upgrades lose latestUpgrade, as the
// controller's initialization does (resetLatestUpgradeLabel).
func (a upgrades) create(ctx context.Context) (*harvesterv1.Upgrade, error) {
	if _, err := createTyped(ctx, a.dyn.Resource(versionGVR).Namespace(SystemNamespace), buildVersion()); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("upgrade: create Version %s: %w", ServerVersion, err)
	}
	ri := a.dyn.Resource(upgradeGVR).Namespace(SystemNamespace)
	old, err := ri.List(ctx, metav1.ListOptions{LabelSelector: labelLatestUpgrade + "=true"})
	if err != nil {
		return nil, fmt.Errorf("upgrade: list Upgrades: %w", err)
	}
	for _, o := range old.Items {
		if err := a.update(ctx, o.GetName(), func(u *harvesterv1.Upgrade) { delete(u.Labels, labelLatestUpgrade) }); err != nil {
			return nil, err
		}
	}
	u := buildUpgrade()
	created, err := a.createUpgrade(ctx, u)
	if err != nil && strings.Contains(err.Error(), certsCheckRefusal) {
		// Every other check passed: the certificates' is the last
		// (checkResources), and the simulator cannot meet it.
		u.Annotations = map[string]string{annSkipWebhook: "true"}
		created, err = a.createUpgrade(ctx, u)
	}
	if err != nil {
		return nil, fmt.Errorf("upgrade: create Upgrade: %w", err)
	}
	return decodeUpgrade(created)
}

// The one check of Harvester's upgrade validator the simulator cannot
// meet: checkCerts dials each address of the Endpoints default/kubernetes
// on port 6443 for kube-apiserver's certificate, and Kubernetes refuses
// loopback addresses in Endpoints, the only ones the simulator has
// (kube-apiserver listens on 127.0.0.1 with --endpoint-reconciler-type
// none). When the validator refuses an Upgrade for that alone, the
// simulator creates it again with the validator's skipWebhook annotation,
// which skips its resource checks (but not the version and previous
// upgrade ones).
const (
	certsCheckRefusal = `can't get list of kubernetes ip, err: endpoints "kubernetes" not found`
	annSkipWebhook    = "harvesterhci.io/skipWebhook"
)

func (a upgrades) createUpgrade(ctx context.Context, u *harvesterv1.Upgrade) (*unstructured.Unstructured, error) {
	return createTyped(ctx, a.dyn.Resource(upgradeGVR).Namespace(SystemNamespace), u)
}

// update changes the Upgrade name with change, retrying conflicts (the
// controller writes it too).
func (a upgrades) update(ctx context.Context, name string, change func(*harvesterv1.Upgrade)) error {
	ri := a.dyn.Resource(upgradeGVR).Namespace(SystemNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		u, err := decodeUpgrade(cur)
		if err != nil {
			return err
		}
		change(u)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(u)
		if err != nil {
			return err
		}
		_, err = ri.Update(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("upgrade: update Upgrade %s: %w", name, err)
	}
	return nil
}

// nodeState records a host's state in status.nodeStatuses, as the job
// controller does when a host's pre-drain or post-drain job starts or ends.
func (a upgrades) nodeState(ctx context.Context, name, host, state, reason string) error {
	return a.update(ctx, name, func(u *harvesterv1.Upgrade) {
		if u.Status.NodeStatuses == nil {
			u.Status.NodeStatuses = map[string]harvesterv1.NodeUpgradeStatus{}
		}
		u.Status.NodeStatuses[host] = harvesterv1.NodeUpgradeStatus{State: state, Reason: reason}
	})
}

func decodeUpgrade(u *unstructured.Unstructured) (*harvesterv1.Upgrade, error) {
	var out harvesterv1.Upgrade
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, fmt.Errorf("decode Upgrade %s: %w", u.GetName(), err)
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	return &out, nil
}

// createTyped creates obj (a typed object with TypeMeta) through ri and
// returns what the API server stored.
func createTyped(ctx context.Context, ri dynamic.ResourceInterface, obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return ri.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
}
