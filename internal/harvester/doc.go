// Package harvester holds what the node driver, harvester-bootstrap and the
// simulator know about Harvester objects: label and annotation keys, the
// label values derived from a machine name, topology keys, the affinity
// terms that pin VMs to zones and spread a pool over hosts, and the
// <namespace>/<name> reference rule. It is pure: no API calls.
package harvester
