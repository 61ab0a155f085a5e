package sim

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rancher/wrangler/v3/pkg/name"
)

// upgradeHelperBinary is Harvester's cmd/upgradehelper (upgrade-helper in
// Harvester's upgrade image), built by make tools.
const upgradeHelperBinary = "upgradehelper"

// upgradeHelper runs bin/upgradehelper with the simulator's admin
// kubeconfig, as upgrade_node.sh and the restore-vm job run it with the
// upgrade Pod's ServiceAccount.
type upgradeHelper struct {
	binDir, kubeconfig, upgrade string
}

// run runs one subcommand; the error carries its output.
func (h upgradeHelper) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(h.binDir, upgradeHelperBinary), append(args, "--kubeconfig", h.kubeconfig)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("upgrade-helper %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// detect is upgrade_node.sh's `upgrade-helper vm-live-migrate-detector
// "$HARVESTER_UPGRADE_NODE_NAME" --shutdown --upgrade
// "$HARVESTER_UPGRADE_NAME"` (command_pre_drain, upgrade_node.sh:369):
// Harvester's GetAllNonLiveMigratableVMINames picks the VMs, which it
// records in the restore-VM ConfigMap and stops through virt-api. The
// script runs under bash -e: its failure fails the pre-drain.
func (h upgradeHelper) detect(ctx context.Context, host string) error {
	_, err := h.run(ctx, "vm-live-migrate-detector", host, "--shutdown", "--upgrade", h.upgrade)
	return err
}

// restoreStartFailed matches restorevm.go's log line for a VM its start
// failed for ("Failed to start VM ns/name: err").
var restoreStartFailed = regexp.MustCompile(`Failed to start VM ([^/\s]+/[^:\s]+): ([^"\n]*)`)

// restore is the restore-vm job's `upgrade-helper restore-vm --node HOST
// --upgrade NAME` (job_controller.go applyRestoreVMJob): it starts each VM
// of the host's ConfigMap entry. The VMs it started are those of names
// whose start its log does not report failed.
func (h upgradeHelper) restore(ctx context.Context, host string, names []string) (started, failed []string, err error) {
	out, err := h.run(ctx, "restore-vm", "--node", host, "--upgrade", h.upgrade)
	if err != nil {
		return nil, nil, err
	}
	bad := map[string]string{}
	for _, m := range restoreStartFailed.FindAllStringSubmatch(out, -1) {
		bad[m[1]] = m[2]
	}
	for _, n := range names {
		if why, ok := bad[n]; ok {
			failed = append(failed, n+": "+why)
			continue
		}
		started = append(started, n)
	}
	return started, failed, nil
}

// restoreVMConfigMap is util.GetRestoreVMConfigMapName, in
// harvester-system: wrangler's SafeConcatName of the Upgrade's name and
// util.RestoreVMConfigMap (Harvester's pkg/util itself needs modules this
// one does not have).
func restoreVMConfigMap(upgrade string) string { return name.SafeConcatName(upgrade, "restore-vm") }
