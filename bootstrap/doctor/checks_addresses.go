package doctor

import (
	"fmt"
	"net/netip"
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
	shared := sharedAddresses(h)
	if len(h.AddressClaims) == 0 && len(shared) == 0 {
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
	seen := "none held"
	if len(held) > 0 {
		seen = fmt.Sprintf("%d held: %s", len(held), strings.Join(held, "; "))
	}
	var problems, hints []string
	if len(shared) > 0 {
		problems = append(problems, "one address on several VMs: "+strings.Join(shared, ", "))
		hints = append(hints, "a machine whose claim was deleted while its VM was stopped came back with its old address, which another machine got meanwhile: remove the machine that no longer holds the address (rancher-machine rm; Rancher replaces it)")
	}
	if len(orphans) > 0 {
		problems = append(problems, "held with no VM: "+strings.Join(orphans, ", "))
		hints = append(hints, "the garbage collector frees an address once its VM is gone; if one stays (its owner reference is missing), delete that ConfigMap")
	}
	if len(problems) > 0 {
		return warn(CheckAddresses, seen+"; "+strings.Join(problems, "; "), strings.Join(hints, "; "))
	}
	return ok(CheckAddresses, seen)
}

// sharedAddresses lists each IPv4 address that more than one VMI reports
// on the same network, naming the VMIs: "10.0.0.12 on default/vlan1 by
// vm-a and vm-b". Only the VMs' own NICs count (the entries KubeVirt names
// after a spec interface): a bridge only the guest agent reports (docker0,
// cni0) has the same address in every guest.
func sharedAddresses(h *clusterstate.Harvester) []string {
	by := map[string][]string{} // "address on network" -> VMI names
	for _, vmi := range h.VMIs {
		networks := map[string]string{}
		for _, n := range vmi.Spec.Networks {
			switch {
			case n.Multus != nil && strings.Contains(n.Multus.NetworkName, "/"):
				networks[n.Name] = n.Multus.NetworkName
			case n.Multus != nil:
				networks[n.Name] = vmi.Namespace + "/" + n.Multus.NetworkName
			default:
				networks[n.Name] = "the pod network"
			}
		}
		mine := map[string]bool{}
		for _, iface := range vmi.Status.Interfaces {
			if iface.Name == "" {
				continue
			}
			for _, ip := range append([]string{iface.IP}, iface.IPs...) {
				a, err := netip.ParseAddr(ip)
				if err != nil || !a.Is4() || staticip.Unusable(a) != "" {
					continue
				}
				network := networks[iface.Name]
				if network == "" {
					network = "interface " + iface.Name
				}
				key := a.String() + " on " + network
				if !mine[key] {
					mine[key] = true
					by[key] = append(by[key], vmi.Name)
				}
			}
		}
	}
	var out []string
	for key, vmis := range by {
		if len(vmis) > 1 {
			sort.Strings(vmis)
			out = append(out, key+" by "+strings.Join(vmis, " and "))
		}
	}
	sort.Strings(out)
	return out
}
