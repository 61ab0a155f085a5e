// Package harvester holds what the node driver and harvester-bootstrap know
// about Harvester objects: label and annotation keys, the label values
// derived from a machine name, topology keys, the affinity terms that pin
// VMs to zones and spread a pool over hosts, the <namespace>/<name>
// reference rule, and the product's reading of Harvester's and KubeVirt's
// rules (maintenance, upgrade, VM mutator, launcher pod). It is pure: no API
// calls. The simulator does not import it: it plays those rules from
// Harvester's source on its own (sim/hv, sim/kv), so the two can disagree
// and a test show it.
package harvester
