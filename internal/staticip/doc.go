// Package staticip holds the facts of per-machine static addresses that the
// driver (which claims them) and harvester-bootstrap doctor (which lists
// them) share: the address range a pool draws from, the deterministic MAC
// of a machine's NIC, and the claim object (a ConfigMap per address, in the
// VM's namespace, owned by the VM) with its name, labels and data. It is
// pure: no API calls.
package staticip
