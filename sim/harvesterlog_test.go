package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHarvesterLogControllerError: the lines are as Harvester v1.8.1
// writes them (logrus' text format; lasso's "error syncing '%s': %s,
// requeuing" around sharedhandler's "handler %s: %v"), the refusal's text
// from nodedrain_controller.go. Only what came after the mark counts, and
// only for the host and handler asked.
func TestHarvesterLogControllerError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "logs", "harvester.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	old := `time="2026-11-29T04:45:42Z" level=error msg="error syncing 'harvester-node-2': handler node-drain-controller: an earlier refusal, requeuing"` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	mark := markHarvesterLog(dir)
	const refusal = "enabling maintenance mode is impossible. Non-migratable VMs found: ns/stuck cannot be migrated due to DisksNotLiveMigratable. Use 'force drain' to perform a collective shutdown"
	lines := `time="2026-11-29T04:46:00Z" level=error msg="error syncing 'harvester-node-1': handler node-drain-controller: not this host, requeuing"` + "\n" +
		`time="2026-11-29T04:46:00Z" level=error msg="error syncing 'harvester-node-2': handler maintain-node-controller: not this handler, requeuing"` + "\n" +
		`time="2026-11-29T04:46:01Z" level=info msg="migration of pod owned by VM mf-off is skipped because of the label harvesterhci.io/maintain-mode-strategy with value Shutdown" kind=pod namespace=ns pod_name=virt-launcher-mf-off-abcde` + "\n" +
		`time="2026-11-29T04:46:01Z" level=error msg="error syncing 'harvester-node-2': handler node-drain-controller: ` + refusal + `, requeuing"` + "\n"
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got := mark.controllerError(ctx, "harvester-node-2", handlerNodeDrain); got != refusal {
		t.Errorf("controllerError = %q, want %q", got, refusal)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	if got := mark.controllerError(short, "harvester-node-0", handlerNodeDrain); got != "" {
		t.Errorf("controllerError of a host without one = %q, want none", got)
	}
	want := "the drain skipped its pod (Harvester: migration of pod owned by VM mf-off is skipped because of the label harvesterhci.io/maintain-mode-strategy with value Shutdown): it keeps running on the host"
	if got := drainWords(mark)("virt-launcher-mf-off-abcde"); got != want {
		t.Errorf("drainWords = %q, want %q", got, want)
	}
	if got := drainWords(mark)("virt-launcher-other"); got != "" {
		t.Errorf("drainWords of a pod never named = %q, want none", got)
	}
}

// TestAPIMessage: steve's JSON error (rancher/apiserver) gives its
// message; Harvester's action handler (pkg/server/http/handler.go)
// writes the error's text as the body.
func TestAPIMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"type":"error","status":"404","code":"NotFound","message":"nodes \"x\" not found"}`:                                 `nodes "x" not found`,
		"draining of this node is not possible: single controlplane cluster, cannot place controlplane in maintenance mode\n": "draining of this node is not possible: single controlplane cluster, cannot place controlplane in maintenance mode",
		"": "HTTP 404 Not Found without a message",
	} {
		if got := apiMessage([]byte(body), "404 Not Found"); got != want {
			t.Errorf("apiMessage(%q) = %q, want %q", body, got, want)
		}
	}
}
