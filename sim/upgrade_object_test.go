package sim

import (
	"slices"
	"testing"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
)

// TestBuildUpgradeIsPastEveryControllerStep: Harvester v1.8's
// upgrade_controller.go OnChanged, branch by branch, finds nothing to do
// for the simulator's Upgrade but its heartbeat: initialized (Completed
// set), no log to wait for (logEnabled false), the image step done
// (ImageReady set), the latest upgrade, neither succeeded nor failed, the
// repo, node preparation and system services steps done (RepoReady,
// NodesPrepared, NodesUpgraded set), and Completed Unknown (the
// heartbeat). The node-down controller's isOnUpgrade and the webhook's
// "previous upgrade" check see it under way.
func TestBuildUpgradeIsPastEveryControllerStep(t *testing.T) {
	u := buildUpgrade()
	steps := []struct {
		what string
		ok   bool
	}{
		{"initialized: Completed set", harvesterv1.UpgradeCompleted.GetStatus(u) != ""},
		{"no log wait: logEnabled false", !u.Spec.LogEnabled},
		{"image step done: ImageReady set", harvesterv1.ImageReady.GetStatus(u) != ""},
		{"latest upgrade", u.Labels["harvesterhci.io/latestUpgrade"] == "true"},
		{"neither succeeded nor failed", !harvesterv1.UpgradeCompleted.IsTrue(u) && !harvesterv1.UpgradeCompleted.IsFalse(u)},
		{"repo step done: RepoReady set", !harvesterv1.ImageReady.IsTrue(u) || harvesterv1.RepoProvisioned.GetStatus(u) != ""},
		{"nodes prepared: NodesPrepared set", !harvesterv1.RepoProvisioned.IsTrue(u) || harvesterv1.NodesPrepared.GetStatus(u) != ""},
		{"system services done", !harvesterv1.NodesPrepared.IsTrue(u) || harvesterv1.SystemServicesUpgraded.GetStatus(u) != ""},
		{"nodes upgrading: NodesUpgraded set", !harvesterv1.SystemServicesUpgraded.IsTrue(u) || harvesterv1.NodesUpgraded.GetStatus(u) != ""},
		{"heartbeat: Completed Unknown", harvesterv1.UpgradeCompleted.IsUnknown(u)},
		{"under way for isOnUpgrade", !slices.Contains([]string{"Succeeded", "Failed"}, u.Labels["harvesterhci.io/upgradeState"])},
	}
	for _, s := range steps {
		if !s.ok {
			t.Errorf("%s: not so in %+v", s.what, u)
		}
	}
	if u.Labels["harvesterhci.io/upgradeState"] != "UpgradingNodes" || u.GenerateName != "hvst-upgrade-" || u.Namespace != "harvester-system" || u.Spec.Version != "v1.8.1" {
		t.Errorf("Upgrade %+v: want harvester-system/hvst-upgrade-*, version v1.8.1, upgradeState UpgradingNodes", u.ObjectMeta)
	}
}

// TestFinishUpgrade: a finished Upgrade is past the controller's
// post-upgrade cleanup (Completed True or False, upgradeCleanup Succeeded,
// for Completed True also the image-cleanup annotation: "post-upgrade
// cleanup already completed"), no longer under way for isOnUpgrade, and
// lets the webhook accept the next Upgrade (cleanup not Pending).
func TestFinishUpgrade(t *testing.T) {
	for _, tc := range []struct {
		failed, state string
		completed     func(any) bool
	}{
		{"", "Succeeded", harvesterv1.UpgradeCompleted.IsTrue},
		{"pre-drain blocked on harvester-node-1", "Failed", harvesterv1.UpgradeCompleted.IsFalse},
	} {
		u := buildUpgrade()
		finishUpgrade(u, tc.failed)
		if u.Labels["harvesterhci.io/upgradeState"] != tc.state || !tc.completed(u) || u.Labels["harvesterhci.io/upgradeCleanup"] != "Succeeded" ||
			u.Annotations["harvesterhci.io/image-cleanup-plan-completed"] == "" {
			t.Errorf("failed %q: labels %v annotations %v conditions %+v; want %s, cleanup Succeeded, image cleanup done",
				tc.failed, u.Labels, u.Annotations, u.Status.Conditions, tc.state)
		}
		if tc.failed != "" && harvesterv1.NodesUpgraded.GetMessage(u) != tc.failed {
			t.Errorf("NodesUpgraded message %q, want %q", harvesterv1.NodesUpgraded.GetMessage(u), tc.failed)
		}
	}
}

// TestRestoreStartFailed reads restorevm.go's logrus line for a failed
// start.
func TestRestoreStartFailed(t *testing.T) {
	line := `time="2026-11-29T07:00:00Z" level=error msg="Failed to start VM default/vm-b: virtualmachine.kubevirt.io \"vm-b\" not found"`
	m := restoreStartFailed.FindStringSubmatch(line)
	if m == nil || m[1] != "default/vm-b" {
		t.Fatalf("%q: %v", line, m)
	}
}

// TestBuildRancherFixtures: one Machine per host, naming it in nodeRef,
// and the Cluster Provisioned.
func TestBuildRancherFixtures(t *testing.T) {
	objs := buildRancherFixtures([]string{"harvester-node-0", "harvester-node-1"})
	if len(objs) != 3 || objs[0].GetKind() != "Cluster" || objs[0].GetName() != "local" || objs[0].GetNamespace() != "fleet-local" {
		t.Fatalf("fixtures %v", objs)
	}
	for i, o := range objs[1:] {
		host := hostName(i)
		ref, _ := o.Object["status"].(map[string]any)["nodeRef"].(map[string]any)
		if o.GetKind() != "Machine" || o.GetName() != machineName(host) || ref["name"] != host || o.Object["status"].(map[string]any)["phase"] != "Running" {
			t.Errorf("Machine %d: %v", i, o.Object)
		}
	}
}
