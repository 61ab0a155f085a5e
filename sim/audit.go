package sim

import (
	"encoding/json"
	"fmt"
	"os"
)

// AuditPolicyFile is the audit policy the simulator writes into its state
// directory when asked for an audit log.
const AuditPolicyFile = "audit-policy.json"

// auditPolicy is kube-apiserver's audit.k8s.io/v1 Policy, reduced to what
// the simulator uses: every request at level Metadata (who, verb,
// resource, name, user agent, status; no bodies, so no secrets), logged
// once when its response is complete.
type auditPolicy struct {
	APIVersion        string      `json:"apiVersion"`
	Kind              string      `json:"kind"`
	OmitStages        []string    `json:"omitStages"`
	Rules             []auditRule `json:"rules"`
	OmitManagedFields bool        `json:"omitManagedFields"`
}

type auditRule struct {
	Level string `json:"level"`
}

func metadataAuditPolicy() auditPolicy {
	return auditPolicy{
		APIVersion: "audit.k8s.io/v1", Kind: "Policy",
		OmitStages:        []string{"RequestReceived", "ResponseStarted"},
		Rules:             []auditRule{{Level: "Metadata"}},
		OmitManagedFields: true,
	}
}

// auditArgs writes the audit policy and returns the kube-apiserver flags
// that log every request to path (JSON lines, written before the response
// is sent); none when path is empty.
func (c *controlPlane) writeAuditPolicy(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := json.Marshal(metadataAuditPolicy())
	if err != nil {
		return nil, fmt.Errorf("encode audit policy: %w", err)
	}
	policy := c.path(AuditPolicyFile)
	if err := os.WriteFile(policy, data, 0o600); err != nil {
		return nil, fmt.Errorf("write audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + path,
		"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxbackup=0",
	}, nil
}
