package doctor

import (
	"fmt"
	"strings"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
)

// CheckDriverGate names the row of what the driver credentials serving
// the VM namespace can take there.
const CheckDriverGate = "driver-credential-gate"

// DriverGate: every driver credential serving the VM namespace (it may read
// every Secret there) has its admission policy in place, no token Secret
// there reaches outside the namespace, and no RoleBinding of the guest
// roles there was made by anyone but this tool (FAIL); a token Secret this
// tool did not make is readable by the driver (WARN).
func DriverGate(s *clusterstate.Snapshot) Row {
	g, ns := s.DriverGate, s.Harvester.Namespace
	switch {
	case g == nil:
		return warn(CheckDriverGate, "not looked at", "see the rows above")
	case g.Err != "":
		return warn(CheckDriverGate, "could not look at the driver credentials serving "+ns+": "+g.Err, "run doctor with an admin --kubeconfig (it lists admission policies, ClusterRoleBindings and RoleBindings)")
	case len(g.Serving) == 0:
		return ok(CheckDriverGate, "no driver credential serves "+ns)
	}
	rerun := "re-run `harvester-bootstrap driver-credential` with that credential's flags (it installs the policy and binding)"
	if len(g.NoPolicy) > 0 {
		return fail(CheckDriverGate, fmt.Sprintf("driver credential(s) %s serve %s without their admission policies: they may mint a token for any ServiceAccount there, bind the guest roles to anyone or name anyone in the namespace grant", names(g.NoPolicy), ns), rerun)
	}
	if len(g.Reach) > 0 {
		var list []string
		for _, r := range g.Reach {
			list = append(list, r.String())
		}
		return fail(CheckDriverGate, fmt.Sprintf("%s holds %s; the driver credential(s) %s may read it", ns, names(list), names(g.Serving)),
			"bind guest credentials in their namespace only (`harvester-bootstrap kubeconfig rotate` without --csi-cluster-wide), delete any other such token Secret or binding, or keep the driver credentials out of "+ns)
	}
	var bindings, tokens []string
	for _, x := range g.NotMadeByTool {
		if strings.HasPrefix(x, "RoleBinding ") {
			bindings = append(bindings, x)
		} else {
			tokens = append(tokens, x)
		}
	}
	if len(bindings) > 0 {
		return fail(CheckDriverGate, fmt.Sprintf("%s not made by harvester-bootstrap: whoever it binds may act as a guest cluster in %s (patch its VMs, attach volumes)", names(bindings), ns),
			"delete it unless you made it on purpose (`kubectl -n "+ns+" delete rolebinding NAME`)")
	}
	if len(tokens) > 0 {
		return warn(CheckDriverGate, fmt.Sprintf("%s not made by harvester-bootstrap: the driver credential(s) %s may read it", names(tokens), names(g.Serving)),
			"delete it if nothing needs it (TokenRequest tokens need no Secret), or keep the driver credentials out of "+ns)
	}
	return ok(CheckDriverGate, fmt.Sprintf("driver credential(s) %s serve %s with their admission policy; no token there reaches outside it, no guest role bound by anyone else", names(g.Serving), ns))
}
