package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Cloud-init network config version 2 is netplan's format. The checks
// below cover its structure: the device sections are maps of device IDs to
// mappings, and the settings cloud-init and netplan read have the right
// types. Unknown settings inside a device are left to netplan.

// v2Sections are netplan's top-level keys; the device sections map IDs to
// device settings.
var (
	v2DeviceSections = []string{"ethernets", "bonds", "bridges", "vlans", "wifis", "tunnels", "vrfs", "modems",
		"dummy-devices", "virtual-ethernets", "nm-devices"}
	v2OtherKeys = []string{"version", "renderer"}
)

// settingKind is the YAML type a device setting must have.
type settingKind int

const (
	kindBool settingKind = iota
	kindInt
	kindString
	kindStringList
	kindMapping
	kindList
	kindAddresses
)

var kindNames = map[settingKind]string{
	kindBool: "a boolean (true or false)", kindInt: "an integer", kindString: "a string",
	kindStringList: "a list of strings", kindMapping: "a mapping", kindList: "a list",
	kindAddresses: "a list of addresses (strings like 10.0.0.5/24)",
}

// v2Settings are the device settings whose types are checked.
var v2Settings = map[string]settingKind{
	"dhcp4": kindBool, "dhcp6": kindBool, "accept-ra": kindBool, "optional": kindBool, "critical": kindBool,
	"wakeonlan": kindBool, "link-local": kindStringList,
	"mtu": kindInt, "id": kindInt,
	"set-name": kindString, "macaddress": kindString, "gateway4": kindString, "gateway6": kindString,
	"link": kindString, "renderer": kindString,
	"match": kindMapping, "nameservers": kindMapping, "parameters": kindMapping,
	"dhcp4-overrides": kindMapping, "dhcp6-overrides": kindMapping,
	"routes": kindList, "routing-policy": kindList,
	"interfaces": kindStringList, "addresses": kindAddresses,
}

// ValidateNetworkData accepts cloud-init network config version 1 (a
// "config" list of mappings with a type) or version 2 (netplan),
// optionally wrapped in a "network" key. Problems name the path inside.
func ValidateNetworkData(s string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return errors.New("must be cloud-init network config YAML (version 1 or 2), plain or base64")
	}
	root, prefix := doc.Content[0], ""
	if inner := mappingValue(root, "network"); inner != nil && inner.Kind == yaml.MappingNode {
		root, prefix = inner, "network."
	}
	version := mappingValue(root, "version")
	v := ""
	if version != nil {
		v = version.Value
	}
	switch v {
	case "1":
		return validateNetworkV1(root, prefix)
	case "2":
		return validateNetworkV2(root, prefix)
	}
	return fmt.Errorf("%sversion must be 1 or 2, got %q", prefix, v)
}

func validateNetworkV1(root *yaml.Node, prefix string) error {
	cfg := mappingValue(root, "config")
	if cfg == nil || cfg.Kind != yaml.SequenceNode {
		return errors.New(`version 1 network config needs a "config" list`)
	}
	var errs []error
	for i, e := range cfg.Content {
		at := fmt.Sprintf("%sconfig[%d]", prefix, i)
		if e.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("%s: must be a mapping with a type (physical, bond, bridge, vlan, nameserver, route)", at))
			continue
		}
		if t := mappingValue(e, "type"); t == nil || t.Kind != yaml.ScalarNode || t.Value == "" {
			errs = append(errs, fmt.Errorf("%s: needs a type (physical, bond, bridge, vlan, nameserver, route)", at))
		}
	}
	return errors.Join(errs...)
}

func validateNetworkV2(root *yaml.Node, prefix string) error {
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i].Value, root.Content[i+1]
		at := prefix + key
		switch {
		case slices.Contains(v2OtherKeys, key):
			if key == "renderer" && val.Kind != yaml.ScalarNode {
				errs = append(errs, fmt.Errorf("%s: must be a string (networkd or NetworkManager)", at))
			}
		case slices.Contains(v2DeviceSections, key):
			errs = append(errs, validateV2Section(key, val, at)...)
		default:
			errs = append(errs, fmt.Errorf("%s: unknown key; valid: %s", at, strings.Join(append(append([]string{}, v2OtherKeys...), v2DeviceSections...), ", ")))
		}
	}
	return errors.Join(errs...)
}

// validateV2Section checks one device section: a map of device IDs to
// settings mappings.
func validateV2Section(section string, n *yaml.Node, at string) []error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("%s: must be a mapping of device IDs to their settings", at)}
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		id, dev := n.Content[i].Value, n.Content[i+1]
		devAt := at + "." + id
		if isNull(dev) {
			continue
		}
		if dev.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("%s: must be a mapping of settings", devAt))
			continue
		}
		errs = append(errs, validateV2Device(section, dev, devAt)...)
	}
	return errs
}

func validateV2Device(section string, dev *yaml.Node, at string) []error {
	var errs []error
	keys := map[string]bool{}
	for i := 0; i+1 < len(dev.Content); i += 2 {
		key, val := dev.Content[i].Value, dev.Content[i+1]
		keys[key] = true
		kind, known := v2Settings[key]
		if !known || hasKind(val, kind) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s.%s: must be %s", at, key, kindNames[kind]))
	}
	if section == "vlans" {
		for _, k := range []string{"id", "link"} {
			if !keys[k] {
				errs = append(errs, fmt.Errorf("%s: a VLAN needs %q", at, k))
			}
		}
		if id := mappingValue(dev, "id"); id != nil && hasKind(id, kindInt) {
			if n, _ := strconv.Atoi(id.Value); n < 0 || n > 4094 {
				errs = append(errs, fmt.Errorf("%s.id: must be a VLAN ID 0-4094, got %s", at, id.Value))
			}
		}
	}
	return errs
}

// yaml11Bools are the booleans of YAML 1.1, which cloud-init (PyYAML) reads.
var yaml11Bools = []string{"true", "false", "yes", "no", "on", "off", "y", "n"}

func hasKind(n *yaml.Node, k settingKind) bool {
	switch k {
	case kindBool:
		return n.Kind == yaml.ScalarNode && slices.Contains(yaml11Bools, strings.ToLower(n.Value))
	case kindInt:
		_, err := strconv.ParseInt(n.Value, 0, 64)
		return n.Kind == yaml.ScalarNode && n.Tag == "!!int" && err == nil
	case kindString:
		return n.Kind == yaml.ScalarNode && n.Tag != "!!null"
	case kindMapping:
		return n.Kind == yaml.MappingNode
	case kindList:
		return n.Kind == yaml.SequenceNode
	case kindStringList, kindAddresses:
		if n.Kind != yaml.SequenceNode {
			return false
		}
		for _, c := range n.Content {
			// netplan also allows an address with options: {10.0.0.5/24: {lifetime: 0}}
			if c.Kind != yaml.ScalarNode && (k != kindAddresses || c.Kind != yaml.MappingNode) {
				return false
			}
		}
		return true
	}
	return false
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// mappingValue is the value of key in mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
