package staticaddr

import (
	"context"
	"fmt"
	"net/netip"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// FreeAddresses lists the free addresses of the range, lowest first,
// from the claims, the other objects of a claim's name (made outside the
// driver: skipped before anything is created) and the VMIs of the
// namespace. With no free address the error names the range and what
// holds it.
func FreeAddresses(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) ([]netip.Addr, error) {
	taken, err := takenOn(ctx, api, m, s)
	if err != nil {
		return nil, err
	}
	free, err := taken.free(s)
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was created", err)
	}
	return free, nil
}

// takenOn reads what holds addresses of the static NIC's network in the VM
// namespace: every claim of the network and every other ConfigMap of a
// claim's name (one list of the namespace's ConfigMaps: a label selector
// would miss the foreign ones), what managed DHCP gave away in the range
// (one get of its IPPool, when it serves the network), and every address
// in the range that a VMI reports on an interface of that network and no
// claim accounts for. The VMIs read are those that can report such an
// address (two lists, by label, so that the cost does not grow with the
// driver's other machines): the machines of the same range (a claim
// deleted by hand) and every VMI the driver did not make.
func takenOn(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan) (takenAddresses, error) {
	ns := m.Config.VMNamespace
	taken := takenAddresses{}
	configMaps, err := api.ListConfigMaps(ctx, ns, "")
	if err != nil {
		return nil, err
	}
	taken.claimedBy(configMaps, s)
	if err := dhcpAllocations(ctx, api, m, s, taken); err != nil {
		return nil, err
	}
	for _, sel := range []string{staticip.LabelRange + "=" + staticip.RangeValue(s.Network.String(), s.Range.String()), "!" + harvester.LabelMachineID} {
		vmis, err := api.ListVMIs(ctx, ns, sel)
		if err != nil {
			return nil, err
		}
		taken.reportedBy(vmis, s)
	}
	return taken, nil
}

// dhcpAllocations reads the static NIC's network's managed-DHCP IPPool,
// if any, and adds what it gave away (skipped with a warning when the
// credential may not read it).
func dhcpAllocations(ctx context.Context, api *harvesterapi.API, m *machine.Machine, s *Plan, taken takenAddresses) error {
	if s.Pool == nil {
		return nil
	}
	pool, err := api.GetDHCPPool(ctx, s.Pool.Namespace, s.Pool.Name)
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		log.Warnf("%s: cannot read managed-DHCP IPPool %s (%v); its allocations are not checked", m.Name, s.Pool, err)
		return nil
	}
	if err != nil || pool.Status.IPv4 == nil {
		return err
	}
	taken.allocatedBy(pool.Status.IPv4.Allocated, s)
	return nil
}
