package staticip

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// A claim is one ConfigMap per held address in the VM's namespace, created
// with Create (the API server's name uniqueness makes holding an address
// atomic) and owned by the VM (garbage collection frees the address with
// the VM, also when the VM is deleted by hand).
const (
	// LabelClaim marks every claim; its value is the network's label
	// value (NetworkValue), so one list finds every address held on it.
	LabelClaim = "node-driver.harvester-kit.io/static-ip"
	// LabelMachine is the machine name (as a label value) holding it.
	LabelMachine = "node-driver.harvester-kit.io/machine"

	// Data keys of a claim.
	KeyAddress = "address" // the address with its prefix, 10.0.0.12/24
	KeyRange   = "range"   // FIRST-LAST/PREFIX
	KeyNetwork = "network" // <namespace>/<name> of the NAD
	KeyNIC     = "nic"     // the VM's interface name, nic-0
	KeyMAC     = "mac"
	KeyMachine = "machine"
)

// ClaimName is the name of the claim of addr on network (<namespace>/<name>):
// one name per address of a network, whatever range or pool asks for it,
// so overlapping ranges never hand out one address twice.
func ClaimName(network string, addr netip.Addr) string {
	a := strings.ReplaceAll(addr.String(), ".", "-")
	name := "static-ip." + strings.ReplaceAll(network, "/", ".") + "." + a
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	return "static-ip." + NetworkValue(network) + "." + a
}

// ClaimedAddress is the address whose claim on network is called name
// (the inverse of ClaimName), and false for any other name.
func ClaimedAddress(network, name string) (netip.Addr, bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return netip.Addr{}, false
	}
	addr, err := netip.ParseAddr(strings.ReplaceAll(name[i+1:], "-", "."))
	if err != nil || ClaimName(network, addr) != name {
		return netip.Addr{}, false
	}
	return addr, true
}

// NetworkValue is the network as a label value: a short hash of its
// <namespace>/<name> (both parts may be longer than a label value).
func NetworkValue(network string) string {
	h := sha256.Sum256([]byte(network))
	return "net-" + hex.EncodeToString(h[:10])
}

// LabelRange marks the VM and VM template (so the VMIs) of a machine that
// holds an address of a static range, with RangeValue of its network and
// range: a create lists the VMIs of its own range by it.
const LabelRange = "node-driver.harvester-kit.io/static-range"

// RangeValue is a static range of a network as a label value: a short
// hash of "<namespace>/<name> FIRST-LAST/PREFIX".
func RangeValue(network, rng string) string {
	h := sha256.Sum256([]byte(network + " " + rng))
	return "rng-" + hex.EncodeToString(h[:10])
}

// Claim is what a claim object says.
type Claim struct {
	Name      string // the object's name
	Address   netip.Prefix
	Range     string
	Network   string
	NIC       string
	MAC       string
	Machine   string
	Owner     string    // the owning VM's name ("" when it has none)
	OwnerUID  string    // the owning VM's UID
	HeldSince time.Time // the object's creation time
}

// ClaimData is the data of a claim object.
func ClaimData(c Claim) map[string]string {
	return map[string]string{
		KeyAddress: c.Address.String(), KeyRange: c.Range, KeyNetwork: c.Network,
		KeyNIC: c.NIC, KeyMAC: c.MAC, KeyMachine: c.Machine,
	}
}

// ClaimFromData reads a claim object's data; name, owner and time are
// the caller's to fill.
func ClaimFromData(data map[string]string) (Claim, error) {
	c := Claim{Range: data[KeyRange], Network: data[KeyNetwork], NIC: data[KeyNIC], MAC: data[KeyMAC], Machine: data[KeyMachine]}
	p, err := netip.ParsePrefix(data[KeyAddress])
	if err != nil {
		return c, fmt.Errorf("claim address %q: %w", data[KeyAddress], err)
	}
	c.Address = p
	return c, nil
}
