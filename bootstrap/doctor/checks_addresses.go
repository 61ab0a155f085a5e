package doctor

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// CheckAddresses is the name of the static-address check.
const CheckAddresses = "static-addresses"

// Addresses lists the cluster's static addresses (machine, NIC, address,
// held since) and warns about any held address whose VM is gone: the
// garbage collector frees it once it notices; until then no machine gets it.
func Addresses(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckAddresses, clusterstate.KindAddressClaim, clusterstate.KindVM); bad {
		return row
	}
	if len(h.AddressClaims) == 0 {
		return ok(CheckAddresses, "none held (no machine uses --harvester-static-address-range)")
	}
	live := map[string]bool{}
	for _, vm := range h.VMs {
		if vm.DeletionTimestamp == nil {
			live[string(vm.UID)] = true
		}
	}
	var held, orphans []string
	claims := append(h.AddressClaims[:0:0], h.AddressClaims...)
	sort.Slice(claims, func(i, j int) bool { return claims[i].Name < claims[j].Name })
	for _, cm := range claims {
		c, err := staticip.ClaimFromData(cm.Data)
		if err != nil {
			orphans = append(orphans, cm.Name+" (unreadable: "+err.Error()+")")
			continue
		}
		line := fmt.Sprintf("%s %s %s since %s", c.Machine, c.NIC, c.Address, cm.CreationTimestamp.UTC().Format(time.RFC3339))
		held = append(held, line)
		owned := false
		for _, o := range cm.OwnerReferences {
			owned = owned || (o.Kind == "VirtualMachine" && live[string(o.UID)])
		}
		if !owned {
			orphans = append(orphans, c.Address.Addr().String()+" of "+c.Machine+" (ConfigMap "+cm.Name+")")
		}
	}
	seen := fmt.Sprintf("%d held: %s", len(held), strings.Join(held, "; "))
	if len(orphans) > 0 {
		return warn(CheckAddresses, seen+"; held with no VM: "+strings.Join(orphans, ", "),
			"the garbage collector frees an address once its VM is gone; if one stays (its owner reference is missing), delete that ConfigMap")
	}
	return ok(CheckAddresses, seen)
}
