package doctor

import (
	"fmt"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/gc"
)

// CheckLeftovers is the name of the leftovers check.
const CheckLeftovers = "leftovers"

// Leftovers: what `gc` would remove.
func Leftovers(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	sel, err := gc.Select(h, s.Guest, s.Now)
	if err != nil {
		return fail(CheckLeftovers, err.Error(), "check that --kubeconfig may list these kinds (and, with --guest-kubeconfig, that it is the cluster's)")
	}
	c := sel.Candidates
	if len(c) == 0 {
		return ok(CheckLeftovers, "none")
	}
	var list []string
	for _, x := range c {
		list = append(list, x.Kind+" "+x.Ref())
	}
	cmd := "`harvester-bootstrap gc --cluster-name " + h.Cluster + " --namespace " + h.Namespace
	if s.Guest != nil {
		cmd += " --guest-kubeconfig " + guestKubeconfigArg(s)
	}
	return warn(CheckLeftovers, fmt.Sprintf("%d: %s", len(c), names(list)), cmd+"` lists them, --delete removes them")
}

// Run runs every check over s, in the order of the report.
func Run(s *clusterstate.Snapshot) Report {
	r := Report{Kubeconfig(s)}
	r = append(r, CloudConfig(s)...)
	r = append(r, Driver(s)...)
	if s.Admin.Err != "" {
		return r // nothing else could be listed
	}
	r = append(r, VMs(s), CreatorLabel(s), Topology(s), GuestAgent(s),
		Addresses(s), Credential(s), Token(s), CredentialScope(s), NamespaceShared(s), DriverGate(s), LoadBalancers(s), IPPools(s), CSIStorageClass(s), Volumes(s), Leftovers(s), Maintenance(s))
	return append(r, Guest(s)...)
}
