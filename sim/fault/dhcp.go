package fault

import (
	"context"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
)

// SetDHCPAgentDown takes the agent of the managed-DHCP IPPools matching
// pattern (NAMESPACE/NAME glob) down (with remove, up again): no new
// leases are served on their networks and their AgentReady condition is
// False. It returns once the matching pools' status shows it.
func SetDHCPAgentDown(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, pattern string, remove bool) error {
	if _, err := path.Match(pattern, ""); err != nil || !strings.Contains(pattern, "/") || strings.Contains(pattern, " ") {
		return fmt.Errorf("fault %s: pattern %q must be NAMESPACE/NAME of IPPools with optional * ? [] globs", DHCPAgentDown, pattern)
	}
	if err := SetLine(ctx, kube, DHCPAgentDown, pattern, remove); err != nil {
		return err
	}
	want := "False"
	if remove {
		want = "True"
	}
	err := untilEvery(ctx, dyn.Resource(dhcpapi.GVRIPPool), func(p *unstructured.Unstructured) bool {
		m, _ := path.Match(pattern, p.GetNamespace()+"/"+p.GetName())
		return !m || agentReady(p) == want
	})
	if err != nil {
		return fmt.Errorf("fault %s %s: pool status does not show it after 30s: %w", DHCPAgentDown, pattern, err)
	}
	return nil
}

func agentReady(p *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == dhcpapi.CondAgentReady {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
