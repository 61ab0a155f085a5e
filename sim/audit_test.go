package sim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAuditLogOnlyWhenAsked: no audit flags without a path; with one, a
// policy that logs every request at level Metadata (no bodies: no secrets
// in the log) once complete.
func TestAuditLogOnlyWhenAsked(t *testing.T) {
	c := &controlPlane{dir: t.TempDir()}
	if args, err := c.writeAuditPolicy(""); err != nil || args != nil {
		t.Fatalf("without a path: %v %v", args, err)
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	args, err := c.writeAuditPolicy(log)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--audit-log-path="+log) || !slices.Contains(args, "--audit-policy-file="+c.path(AuditPolicyFile)) {
		t.Errorf("flags %v", args)
	}
	data, err := os.ReadFile(c.path(AuditPolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	var p auditPolicy
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "Policy" || len(p.Rules) != 1 || p.Rules[0].Level != "Metadata" || !slices.Contains(p.OmitStages, "RequestReceived") {
		t.Errorf("policy %s", data)
	}
}
