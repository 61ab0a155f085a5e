package staticaddr

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"
)

// CheckNetworkData checks that the user's network data takes the static
// NIC (it must be version 2 to be merged): the one check of the flags that
// needs the network data's renderer, which config.Validate calls.
func CheckNetworkData(c config.Config, s *config.StaticAddressing) []error {
	if s == nil || c.NetworkData == "" {
		return nil
	}
	if _, err := MergeStaticNetworkData(c.NetworkData, StaticNIC{ID: s.NICName(), MAC: "02:00:00:00:00:00", Address: netip.PrefixFrom(s.Range.First, s.Range.Prefix.Bits())}); err != nil {
		return []error{config.FlagError(config.FlagNetworkData, err)}
	}
	return nil
}

// StaticNIC is one machine's static NIC, resolved: what its network data
// says.
type StaticNIC struct {
	ID      string // the device ID in the network data (the VM interface name)
	MAC     string
	Address netip.Prefix
	Gateway netip.Addr // invalid: none
	DNS     []netip.Addr
}

// netplanEthernet is the part of a netplan v2 ethernet device the driver writes.
type netplanEthernet struct {
	Match       netplanMatch        `yaml:"match"`
	DHCP4       bool                `yaml:"dhcp4"`
	DHCP6       bool                `yaml:"dhcp6"`
	Addresses   []string            `yaml:"addresses"`
	Routes      []netplanRoute      `yaml:"routes,omitempty"`
	Nameservers *netplanNameservers `yaml:"nameservers,omitempty"`
}

type netplanMatch struct {
	MACAddress quoted `yaml:"macaddress"`
}

// quoted is a string written in double quotes: cloud-init reads YAML 1.1,
// where an unquoted MAC of digits only (52:54:00:12:34:56) is a base-60
// number.
type quoted string

func (q quoted) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: string(q)}, nil
}

type netplanRoute struct {
	To  string `yaml:"to"`
	Via string `yaml:"via"`
}

type netplanNameservers struct {
	Addresses []string `yaml:"addresses"`
}

func (n StaticNIC) device() netplanEthernet {
	d := netplanEthernet{Match: netplanMatch{MACAddress: quoted(n.MAC)}, Addresses: []string{n.Address.String()}}
	if n.Gateway.IsValid() {
		d.Routes = []netplanRoute{{To: "default", Via: n.Gateway.String()}}
	}
	if len(n.DNS) > 0 {
		d.Nameservers = &netplanNameservers{}
		for _, a := range n.DNS {
			d.Nameservers.Addresses = append(d.Nameservers.Addresses, a.String())
		}
	}
	return d
}

// MergeStaticNetworkData renders a machine's network data: the user's
// --harvester-network-data (netplan version 2, possibly under a "network"
// key; empty for none), kept as written, with the static NIC added to its
// ethernets, matched by MAC. The user's document may not use the static
// NIC's device ID, nor match its MAC. It is pure.
func MergeStaticNetworkData(user string, n StaticNIC) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	doc := root
	if strings.TrimSpace(user) != "" {
		var parsed yaml.Node
		if err := yaml.Unmarshal([]byte(user), &parsed); err != nil || len(parsed.Content) == 0 || parsed.Content[0].Kind != yaml.MappingNode {
			return nil, errors.New("must be cloud-init network config YAML")
		}
		doc, root = parsed.Content[0], parsed.Content[0]
		if inner := mappingValue(root, "network"); inner != nil && inner.Kind == yaml.MappingNode {
			root = inner
		}
		if v := mappingValue(root, "version"); v == nil || v.Value != "2" {
			got := "none"
			if v != nil {
				got = v.Value
			}
			return nil, fmt.Errorf("must be network config version 2 (netplan) to be combined with --%s, got version %s", config.FlagStaticAddressRange, got)
		}
	} else {
		setMapping(root, "version", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "2"})
	}
	eth := mappingValue(root, "ethernets")
	switch {
	case eth == nil || (eth.Kind == yaml.ScalarNode && eth.Tag == "!!null"):
		eth = &yaml.Node{Kind: yaml.MappingNode}
		setMapping(root, "ethernets", eth)
	case eth.Kind != yaml.MappingNode:
		return nil, errors.New("ethernets must be a mapping of device IDs to their settings")
	}
	if mappingValue(eth, n.ID) != nil {
		return nil, fmt.Errorf("ethernets.%s is the device the static address is written to; give your device another ID", n.ID)
	}
	for i := 0; i+1 < len(eth.Content); i += 2 {
		if mac := mappingValue(mappingValue(eth.Content[i+1], "match"), "macaddress"); mac != nil && strings.EqualFold(mac.Value, n.MAC) {
			return nil, fmt.Errorf("ethernets.%s matches the static NIC's MAC %s; leave that NIC to --%s", eth.Content[i].Value, n.MAC, config.FlagStaticAddressRange)
		}
	}
	var dev yaml.Node
	if err := dev.Encode(n.device()); err != nil {
		return nil, fmt.Errorf("render network data: %w", err)
	}
	setMapping(eth, n.ID, &dev)
	out, err := yamlutil.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("render network data: %w", err)
	}
	return out, nil
}

// setMapping appends key: value to mapping m (the key must be new).
func setMapping(m *yaml.Node, key string, value *yaml.Node) {
	if i := mappingIndex(m, key); i >= 0 {
		m.Content[i+1] = value
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
}

// mappingValue is the value of key in mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	if i := mappingIndex(m, key); i >= 0 {
		return m.Content[i+1]
	}
	return nil
}

func mappingIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}
